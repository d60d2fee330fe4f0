#!/usr/bin/env bash
# Self-test of hack/verify-dockerfiles.sh: proves that the check fails when a Dockerfile
# would not get a package its binary needs. It copies the repository's Dockerfiles and
# .dockerignore files into a temporary directory, breaks the copies the ways a moved or
# new package breaks them, and runs the check on each broken copy: it must fail and name
# the Dockerfile and the package directory. On the untouched copy it must pass. Nothing
# here is specific to a package: the packages come from the check's own -list output.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

# fresh: a clean copy of the Dockerfiles and ignore files in $tmp/df.
fresh() {
  rm -rf "$tmp/df"
  mkdir -p "$tmp/df"
  find . \( -name .git -o -name bin -o -name .localcluster -o -name testdata \) -prune -o -type f \
    \( -name Dockerfile -o -name 'Dockerfile.*' -o -name '*.Dockerfile' -o -name Containerfile -o -name .dockerignore \) -print |
    while read -r f; do
      mkdir -p "$tmp/df/$(dirname "$f")"
      cp "$f" "$tmp/df/$f"
    done
}

# ignore_file DOCKERFILE: the ignore file of the copy that applies to DOCKERFILE.
ignore_file() {
  if [[ -f $tmp/df/$1.dockerignore ]]; then echo "$tmp/df/$1.dockerignore"; else echo "$tmp/df/.dockerignore"; fi
}

# expect WHAT CODE TEXT [DOCKERFILE...]: runs the check on the copy; it must exit with
# CODE and, unless CODE is 0, print TEXT.
expect() {
  local what=$1 want=$2 text=$3 code=0
  shift 3
  "$check" -root "$root" -dockerfiles "$tmp/df" "$@" >"$tmp/out" 2>&1 || code=$?
  if [[ $code != "$want" ]] || { [[ $want != 0 ]] && ! grep -qF -- "$text" "$tmp/out"; }; then
    echo "  FAILED: $what: want exit $want${text:+ and output naming \"$text\"}, got exit $code:" >&2
    sed 's/^/    | /' "$tmp/out" >&2
    failures=$((failures + 1))
    return
  fi
  echo "  ok: $what: exit $code"
  if [[ $want != 0 ]]; then sed 's/^/    | /' "$tmp/out"; fi
}

echo "verify: Dockerfiles check self-test"
# The untouched copy passes, through the script that make verify runs.
fresh
code=0
hack/verify-dockerfiles.sh -dockerfiles "$tmp/df" >"$tmp/out" 2>&1 || code=$?
if [[ $code != 0 ]]; then
  echo "  FAILED: the untouched copy: want exit 0, got $code:" >&2
  sed 's/^/    | /' "$tmp/out" >&2
  exit 1
fi
echo "  ok: the untouched copy passes"
check=$tmp/verify-dockerfiles
(cd hack/images && go build -o "$check" ./verifydockerfiles)

hack/verify-dockerfiles.sh -list >"$tmp/list"
mapfile -t dockerfiles < <(cut -f1 "$tmp/list" | sort -u)
if ((${#dockerfiles[@]} == 0)); then
  echo "  FAILED: the check finds no Dockerfile that runs go build" >&2
  exit 1
fi

# 1. For each Dockerfile, the .dockerignore leaves out one package its binary needs (the
#    last one -list names, which changes as packages come and go).
for df in "${dockerfiles[@]}"; do
  pkg=$(awk -F'\t' -v df="$df" '$1 == df {p = $2} END {print p}' "$tmp/list")
  fresh
  printf '%s\n' "$pkg" >>"$(ignore_file "$df")"
  expect "$df with $pkg/ in the .dockerignore" 1 "$df:" "$df"
  grep -qF "package directory $pkg/" "$tmp/out" || grep -qF "the package in the context root" "$tmp/out" || {
    echo "  FAILED: the output does not name $pkg/" >&2
    failures=$((failures + 1))
  }
done

# 2. The old style, one COPY line per directory, which is how Dockerfile.controller came to
#    miss images/: COPY . . replaced by a COPY of each needed package directory passes; the
#    same without one of the lines fails naming that package.
df=${dockerfiles[0]}
for d in "${dockerfiles[@]}"; do [[ $d == Dockerfile.controller ]] && df=$d; done
mapfile -t pkgs < <(awk -F'\t' -v df="$df" '$1 == df {print $2}' "$tmp/list")
if grep -qE '^COPY +\. +\.(/)? *$' "$df"; then
  # The dropped directory must not sit inside another one that is copied (COPY controller/
  # copies controller/deferpolicy/ too): take the first such from the middle of the list on.
  drop=""
  for ((i = ${#pkgs[@]} / 2; i < ${#pkgs[@]} + ${#pkgs[@]} / 2; i++)); do
    candidate=${pkgs[$((i % ${#pkgs[@]}))]}
    nested=""
    for p in "${pkgs[@]}"; do
      if [[ $p != "$candidate" && $candidate == "$p"/* ]]; then nested=1; fi
    done
    if [[ -z $nested ]]; then drop=$candidate; break; fi
  done
  for mode in all drop; do
    fresh
    lines=""
    for p in "${pkgs[@]}"; do
      if [[ $mode == drop && $p == "$drop" ]]; then continue; fi
      lines+="COPY $p/ $p/\n"
    done
    awk -v lines="$lines" '/^COPY +\. +\.\/? *$/ {printf "%s", lines; next} {print}' "$df" >"$tmp/df/$df"
    if [[ $mode == all ]]; then
      expect "$df with one COPY line per package directory" 0 "" "$df"
    else
      expect "$df with the COPY line of $drop/ removed" 1 "needs package directory $drop/" "$df"
    fi
  done
else
  echo "  skip: $df has no COPY . . line to rewrite into one COPY per directory"
fi

# 3. go.sum left out of the build context.
fresh
echo go.sum >>"$(ignore_file "$df")"
expect "$df with go.sum in the .dockerignore" 1 "needs module file go.sum" "$df"

# 4. A .dockerignore pattern that moby/patternmatcher refuses fails loudly, not silently.
fresh
echo '[z-a' >>"$(ignore_file "$df")"
expect "a .dockerignore pattern that patternmatcher refuses" 2 "bad .dockerignore pattern" "$df"

if ((failures)); then
  echo "verify: Dockerfiles check self-test FAILED ($failures)" >&2
  exit 1
fi
echo "verify: Dockerfiles check self-test OK"

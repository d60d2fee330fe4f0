// Package images resolves registry tags to digests and polls the tags that ImageChange
// triggers watch (DESIGN.md §8).
//
// # Resolving
//
// A Resolver turns one tag reference (reg:5000/team/app:stable) into the digest the
// registry serves for it, which is what repo@sha256:… pins. It asks with a HEAD request
// for the manifest and reads Docker-Content-Digest. It never lists tags. Some registries
// answer HEAD badly: 405 or 501 (HEAD not supported), another 4xx without the body that
// would explain it, or a 200 without the digest header. Then it asks once more with GET
// and hashes the manifest it receives; that also yields the registry's own explanation
// of a 401, 403 or 404. It does not fall back on 429, 408 or 5xx, where a second request
// would only add load. An image index and an image manifest resolve alike: the digest is
// that of whatever the tag points at.
//
// A resolver keeps a session per keychain and repository, which remembers the registry's
// answer to the version check and its bearer token, so that a check is one request. A
// session that failed other than by a plain answer to the manifest request (a 404, say)
// is dropped. Plain HTTP goes only to loopback registries and to those marked insecure.
//
// Registry credentials come from Kubernetes pull secrets (KeychainFromSecrets), matched
// to a registry the way the kubelet matches them. No secret content is ever logged or
// formatted: the keychain and its authenticators print only registry and secret names,
// and a broken secret is reported by name and by what is wrong with it.
//
// # Rate limits and Retry-After
//
// Every request, version checks and token requests included, first takes a token from
// the bucket of its host (RegistryQPS, RegistryBurst), which all pollers share. When a
// registry answers 429 (or 503) with Retry-After, the whole host is paused until then:
// requests to it wait, and the error of the check that received the 429 reports the
// wait (RetryAfter). go-containerregistry does not expose the header, so the resolver's
// own http.RoundTripper, beneath go-containerregistry's, reads it. go-containerregistry's
// own retries are turned off: the poller decides when to ask again.
//
// # Polling
//
// A Watcher runs one poller per unique (reference, credentials ID), however many
// subscribers (DeploymentConfigs) watch it. A poller checks at once when it starts, then
// every Interval with a random Jitter. After an error it backs off exponentially (the
// interval doubles with each consecutive error, up to MaxBackoff), and after a 429 it
// waits at least the Retry-After. The subscribers hear of every change of the result (a
// new digest, an error that appears, changes or clears) through a callback, and read the
// result with Latest. Errors are results, not log lines: the package does not log. A
// poller whose subscribers are all gone stops.
package images

// Command testapp is the workload of the end-to-end tests. The local cluster's node agent
// maps the images stagehand/testapp:* to this binary (on kind it is built into that image).
//
// Usage:
//
//	testapp [serve]
//	    Prints a start line, then "tick N" every second. Serves GET /healthz on $PORT when
//	    PORT is set. On SIGTERM or SIGINT it prints "terminating" and exits 0.
//	testapp exit CODE [MESSAGE]
//	    Writes MESSAGE to the termination-message file and exits with CODE. The file is
//	    $STAGEHAND_TERMINATION_MESSAGE_PATH (set by the node agent), else
//	    /dev/termination-log.
//	testapp kube get configmaps|pods -n NAMESPACE
//	    Lists the objects with the pod's own identity (in-cluster config first, then
//	    KUBECONFIG) and prints their names. Exits 3 when the API answers Forbidden, 1 on
//	    any other error.
//	testapp env [NAME...]
//	    Prints NAME=value for each name (all variables when none is given), sorted.
package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"syscall"
	"time"
)

// Exit codes of testapp.
const (
	exitOK        = 0
	exitError     = 1
	exitUsage     = 2
	exitForbidden = 3
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) == 0 {
		return serve()
	}
	switch args[0] {
	case "serve":
		return serve()
	case "exit":
		return exitWith(args[1:])
	case "kube":
		return kube(args[1:])
	case "env":
		return printEnv(args[1:])
	}
	fmt.Fprintf(os.Stderr, "testapp: unknown command %q (want serve, exit, kube or env)\n", args[0])
	return exitUsage
}

// serve ticks until SIGTERM, optionally serving /healthz on $PORT.
func serve() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	host, _ := os.Hostname()
	fmt.Printf("testapp serving: pid %d, pod %s, host %s\n", os.Getpid(), os.Getenv("HOSTNAME"), host)
	if port := os.Getenv("PORT"); port != "" {
		mux := http.NewServeMux()
		mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte("ok\n"))
		})
		srv := &http.Server{Addr: ":" + port, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				fmt.Fprintf(os.Stderr, "testapp: serving /healthz on port %s: %v\n", port, err)
			}
		}()
		defer srv.Close()
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			fmt.Println("terminating")
			return exitOK
		case <-tick.C:
			fmt.Printf("tick %d\n", n)
		}
	}
}

// exitWith writes the termination message and exits with the given code.
func exitWith(args []string) int {
	if len(args) == 0 || len(args) > 2 {
		fmt.Fprintln(os.Stderr, "usage: testapp exit CODE [MESSAGE]")
		return exitUsage
	}
	code, err := strconv.Atoi(args[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "testapp: exit code %q is not a number\n", args[0])
		return exitUsage
	}
	if len(args) == 2 {
		path := os.Getenv("STAGEHAND_TERMINATION_MESSAGE_PATH")
		if path == "" {
			path = "/dev/termination-log"
		}
		if err := os.WriteFile(path, []byte(args[1]), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "testapp: writing termination message: %v\n", err)
		}
		fmt.Println(args[1])
	}
	return code
}

func printEnv(names []string) int {
	if len(names) == 0 {
		env := os.Environ()
		sort.Strings(env)
		for _, kv := range env {
			fmt.Println(kv)
		}
		return exitOK
	}
	for _, n := range names {
		fmt.Printf("%s=%s\n", n, os.Getenv(n))
	}
	return exitOK
}

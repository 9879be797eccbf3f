// go_grpc: grpc-go server for rpcprof, serving helloworld.Greeter/SayHello and
// complexproto.Greeter/SayHello on 127.0.0.1:PORT (h2c), on one core (GOMAXPROCS=1).
//
// The app handlers are the methods main.(*helloServer).SayHello and
// main.(*complexServer).SayHello; server.yaml's `app` regex matches those symbols.
//
// --pprof-port N (off by default, 0) also serves net/http/pprof on 127.0.0.1:N, as a Go service in a
// fleet does for its profiler to pull: /debug/pprof/profile?seconds=S is a CPU profile of S seconds.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"google.golang.org/grpc"

	cpb "rpcprof/servers/go_grpc/pb/complexproto"
	hpb "rpcprof/servers/go_grpc/pb/helloworld"
)

type helloServer struct {
	hpb.UnimplementedGreeterServer
}

// SayHello answers "Hello " + name + "!" (the reply of tonic's and pajamax's helloworld examples).
func (s *helloServer) SayHello(_ context.Context, in *hpb.HelloRequest) (*hpb.HelloReply, error) {
	return &hpb.HelloReply{Message: "Hello " + in.GetName() + "!"}, nil
}

type complexServer struct {
	cpb.UnimplementedGreeterServer
}

// SayHello echoes the request's Hello message unchanged.
func (s *complexServer) SayHello(_ context.Context, in *cpb.HelloRequest) (*cpb.HelloReply, error) {
	return &cpb.HelloReply{Response: in.GetRequest()}, nil
}

func main() {
	runtime.GOMAXPROCS(1)
	port := flag.Int("port", 50051, "TCP port to listen on (127.0.0.1 only)")
	pprofPort := flag.Int("pprof-port", 0, "also serve net/http/pprof on this port (127.0.0.1 only); 0: off")
	flag.Parse()
	if *pprofPort != 0 {
		servePprof(*pprofPort)
	}

	lis, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		fmt.Fprintf(os.Stderr, "go_grpc: listen: %v\n", err)
		os.Exit(1)
	}
	s := grpc.NewServer()
	hpb.RegisterGreeterServer(s, &helloServer{})
	cpb.RegisterGreeterServer(s, &complexServer{})

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sigs
		s.Stop() // closes the listener and every connection; Serve then returns
	}()

	fmt.Fprintf(os.Stderr, "go_grpc: listening on %s (GOMAXPROCS=%d)\n", lis.Addr(), runtime.GOMAXPROCS(0))
	if err := s.Serve(lis); err != nil && err != grpc.ErrServerStopped {
		fmt.Fprintf(os.Stderr, "go_grpc: serve: %v\n", err)
		os.Exit(1)
	}
}

// servePprof serves net/http/pprof's handlers on 127.0.0.1:port, on a mux of its own (not http's default
// one), from a goroutine; a port it cannot listen on stops the server at start.
func servePprof(port int) {
	lis, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		fmt.Fprintf(os.Stderr, "go_grpc: pprof listen: %v\n", err)
		os.Exit(1)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	fmt.Fprintf(os.Stderr, "go_grpc: net/http/pprof on http://%s/debug/pprof/\n", lis.Addr())
	go func() {
		if err := http.Serve(lis, mux); err != nil {
			fmt.Fprintf(os.Stderr, "go_grpc: pprof serve: %v\n", err)
		}
	}()
}

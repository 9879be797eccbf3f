// go_grpc: grpc-go server for rpcprof, serving helloworld.Greeter/SayHello and
// complexproto.Greeter/SayHello on 127.0.0.1:PORT (h2c), on one core (GOMAXPROCS=1).
//
// The app handlers are the methods main.(*helloServer).SayHello and
// main.(*complexServer).SayHello; server.yaml's `app` regex matches those symbols.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
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
	flag.Parse()

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

// java_grpc: grpc-java server for rpcprof, serving /helloworld.Greeter/SayHello and
// /complexproto.Greeter/SayHello on 127.0.0.1:PORT (h2c), on Netty's epoll transport with one event-loop
// thread that also runs the handlers (directExecutor): every request is handled on that one thread.
//
// The app handlers are the methods HelloGreeter.sayHello and ComplexGreeter.sayHello; server.yaml keeps
// them out of the JIT's inlining (-XX:CompileCommand=dontinline) so that their frames stay in perf's
// stacks, and its `app` regex matches them.
package rpcprof.javagrpc;

import complexproto.Complexproto;
import helloworld.Helloworld;
import io.grpc.Server;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollEventLoopGroup;
import io.netty.channel.epoll.EpollServerSocketChannel;
import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;

public final class JavaGrpcServer {
  private JavaGrpcServer() {}

  /** helloworld.Greeter/SayHello: message = "Hello " + name + "!". */
  static final class HelloGreeter extends helloworld.GreeterGrpc.GreeterImplBase {
    @Override
    public void sayHello(Helloworld.HelloRequest request, StreamObserver<Helloworld.HelloReply> reply) {
      reply.onNext(Helloworld.HelloReply.newBuilder().setMessage("Hello " + request.getName() + "!").build());
      reply.onCompleted();
    }
  }

  /** complexproto.Greeter/SayHello: response = request, unchanged. */
  static final class ComplexGreeter extends complexproto.GreeterGrpc.GreeterImplBase {
    @Override
    public void sayHello(Complexproto.HelloRequest request, StreamObserver<Complexproto.HelloReply> reply) {
      reply.onNext(Complexproto.HelloReply.newBuilder().setResponse(request.getRequest()).build());
      reply.onCompleted();
    }
  }

  private static int parsePort(String[] args) {
    int port = 50051;
    for (int i = 0; i < args.length; i++) {
      String arg = args[i];
      String value;
      if (arg.equals("--port") && i + 1 < args.length) {
        value = args[++i];
      } else if (arg.startsWith("--port=")) {
        value = arg.substring("--port=".length());
      } else {
        throw new IllegalArgumentException("unknown argument: " + arg);
      }
      try {
        port = Integer.parseInt(value);
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("bad port: " + value);
      }
      if (port < 0 || port > 65535) {
        throw new IllegalArgumentException("bad port: " + value);
      }
    }
    return port;
  }

  public static void main(String[] args) throws Exception {
    int port;
    try {
      port = parsePort(args);
    } catch (IllegalArgumentException e) {
      System.err.println("java_grpc: " + e.getMessage());
      System.exit(2);
      return;
    }
    if (!Epoll.isAvailable()) {
      System.err.println("java_grpc: Netty's epoll transport is not available: " + Epoll.unavailabilityCause());
      System.exit(1);
    }
    // one event loop: it accepts, reads, writes and (directExecutor) runs the handlers
    EventLoopGroup loop = new EpollEventLoopGroup(1);
    Server server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", port))
        .channelType(EpollServerSocketChannel.class)
        // as the other servers bind: a connection of the last run lingering in TIME_WAIT must not block the port
        .withOption(ChannelOption.SO_REUSEADDR, true)
        .bossEventLoopGroup(loop)
        .workerEventLoopGroup(loop)
        .directExecutor()
        .addService(new HelloGreeter())
        .addService(new ComplexGreeter())
        .build();
    try {
      server.start();
    } catch (java.io.IOException e) {
      System.err.println("java_grpc: bind 127.0.0.1:" + port + ": " + e.getMessage());
      loop.shutdownGracefully(0, 0, TimeUnit.SECONDS);
      System.exit(1);
    }
    // SIGTERM and SIGINT run the JVM's shutdown hooks: close the listener and every connection, then exit
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      server.shutdownNow();
      try {
        server.awaitTermination(2, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      loop.shutdownGracefully(0, 0, TimeUnit.SECONDS);
    }, "shutdown"));
    System.err.println("java_grpc: listening on 127.0.0.1:" + server.getPort() + " (epoll, one event loop, "
        + Runtime.getRuntime().availableProcessors() + " processor(s) seen by the JVM)");
    server.awaitTermination();
  }
}

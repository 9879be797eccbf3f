// cpp_grpc: gRPC C++ server for rpcprof, serving /helloworld.Greeter/SayHello and
// /complexproto.Greeter/SayHello on 127.0.0.1:PORT (h2c), as grpc_bench's cpp_grpc_mt does with
// GRPC_SERVER_CPUS=1: the asynchronous API, one completion queue, one thread that polls it (and with it
// the sockets: the queue's poller is grpc's epoll engine) and runs the handlers. The main thread only
// waits for SIGTERM or SIGINT, then shuts the server down.
//
// The app handlers are HelloGreeter::SayHello and ComplexGreeter::SayHello, kept out of line so that
// their frames stay in perf's stacks; server.yaml's `app` regex matches them.
#include <grpc/support/log.h>
#include <grpcpp/grpcpp.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "complexproto.grpc.pb.h"
#include "helloworld.grpc.pb.h"

// libgpr's own logger (exported, not declared in its headers): put back once the server listens
void gpr_default_log(gpr_log_func_args* args);

namespace cpp_grpc {

struct HelloGreeter {
  // helloworld.Greeter/SayHello: message = "Hello " + name + "!"
  __attribute__((noinline)) static void SayHello(const helloworld::HelloRequest& request,
                                                 helloworld::HelloReply* reply) {
    reply->set_message("Hello " + request.name() + "!");
  }
};

struct ComplexGreeter {
  // complexproto.Greeter/SayHello: response = request (moved, as grpc_bench's handler does)
  __attribute__((noinline)) static void SayHello(complexproto::HelloRequest* request,
                                                 complexproto::HelloReply* reply) {
    *reply->mutable_response() = std::move(*request->mutable_request());
  }
};

// One call in flight on the completion queue, its tag: CREATE asks grpc for the next call of this
// method; PROCESS (the call arrived) asks for the one after it, runs the handler and finishes;
// FINISH (the reply is sent) frees it.
class Call {
 public:
  virtual ~Call() = default;
  virtual void Proceed(bool ok) = 0;
};

template <typename Service, typename Request, typename Reply, typename Handler>
class MethodCall final : public Call {
 public:
  MethodCall(Service* service, grpc::ServerCompletionQueue* cq, Handler handler)
      : service_(service), cq_(cq), handler_(handler), responder_(&ctx_) {
    service_->RequestSayHello(&ctx_, &request_, &responder_, cq_, cq_, this);
  }

  void Proceed(bool ok) override {
    if (state_ == kProcess && ok) {
      new MethodCall(service_, cq_, handler_);
      handler_(&request_, &reply_);
      state_ = kFinish;
      responder_.Finish(reply_, grpc::Status::OK, this);
      return;
    }
    // the reply is sent, or the server is shutting down (ok false: no call, or no reply sent)
    delete this;
  }

 private:
  enum State { kProcess, kFinish };
  Service* service_;
  grpc::ServerCompletionQueue* cq_;
  Handler handler_;
  grpc::ServerContext ctx_;
  Request request_;
  Reply reply_;
  grpc::ServerAsyncResponseWriter<Reply> responder_;
  State state_ = kProcess;
};

void HelloHandler(helloworld::HelloRequest* request, helloworld::HelloReply* reply) {
  HelloGreeter::SayHello(*request, reply);
}

void ComplexHandler(complexproto::HelloRequest* request, complexproto::HelloReply* reply) {
  ComplexGreeter::SayHello(request, reply);
}

using HelloCall = MethodCall<helloworld::Greeter::AsyncService, helloworld::HelloRequest,
                             helloworld::HelloReply, decltype(&HelloHandler)>;
using ComplexCall = MethodCall<complexproto::Greeter::AsyncService, complexproto::HelloRequest,
                               complexproto::HelloReply, decltype(&ComplexHandler)>;

// The server thread: every event of the one completion queue, until it is shut down.
void ServeCompletionQueue(grpc::ServerCompletionQueue* cq, helloworld::Greeter::AsyncService* hello,
                          complexproto::Greeter::AsyncService* complex) {
  pthread_setname_np(pthread_self(), "cpp_grpc-cq");
  new HelloCall(hello, cq, &HelloHandler);
  new ComplexCall(complex, cq, &ComplexHandler);
  void* tag;
  bool ok;
  while (cq->Next(&tag, &ok)) static_cast<Call*>(tag)->Proceed(ok);
}

// grpc's log while the server starts: kept, so that a failure to listen is told in one line
std::string startup_log;
void KeepLog(gpr_log_func_args* args) { startup_log += std::string(args->message) + "\n"; }

// "Address already in use" from grpc's error text (os_error:"..."), else the empty string
std::string OsError(const std::string& log) {
  const std::string key = "os_error:\"";
  size_t at = log.find(key);
  if (at == std::string::npos) return "";
  at += key.size();
  return log.substr(at, log.find('"', at) - at);
}

int ParsePort(int argc, char** argv) {
  int port = 50051;
  for (int i = 1; i < argc; i++) {
    const char* value;
    if (std::strcmp(argv[i], "--port") == 0 && i + 1 < argc) {
      value = argv[++i];
    } else if (std::strncmp(argv[i], "--port=", 7) == 0) {
      value = argv[i] + 7;
    } else {
      std::fprintf(stderr, "cpp_grpc: unknown argument: %s (usage: cpp_grpc --port PORT)\n", argv[i]);
      std::exit(2);
    }
    char* end;
    long parsed = std::strtol(value, &end, 10);
    if (*value == '\0' || *end != '\0' || parsed < 0 || parsed > 65535) {
      std::fprintf(stderr, "cpp_grpc: bad port: %s\n", value);
      std::exit(2);
    }
    port = static_cast<int>(parsed);
  }
  return port;
}

}  // namespace cpp_grpc

int main(int argc, char** argv) {
  int port = cpp_grpc::ParsePort(argc, argv);
  // SIGTERM and SIGINT are blocked before grpc starts its threads, which inherit the mask: the main
  // thread alone takes them, with sigwait
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  gpr_set_log_function(cpp_grpc::KeepLog);
  helloworld::Greeter::AsyncService hello;
  complexproto::Greeter::AsyncService complex;
  grpc::ServerBuilder builder;
  int bound = 0;
  builder.AddListeningPort("127.0.0.1:" + std::to_string(port), grpc::InsecureServerCredentials(), &bound);
  // no SO_REUSEPORT (grpc's default on Linux): a port another server holds is an error, not a shared port
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.RegisterService(&hello);
  builder.RegisterService(&complex);
  std::unique_ptr<grpc::ServerCompletionQueue> cq = builder.AddCompletionQueue();
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || bound == 0) {
    std::string why = cpp_grpc::OsError(cpp_grpc::startup_log);
    std::fprintf(stderr, "cpp_grpc: cannot listen on 127.0.0.1:%d: %s\n", port,
                 why.empty() ? "grpc could not bind it" : why.c_str());
    return 1;
  }
  gpr_set_log_function(gpr_default_log);
  std::fprintf(stderr, "cpp_grpc: listening on 127.0.0.1:%d (grpc %s, one completion-queue thread)\n", bound,
               grpc::Version().c_str());

  std::thread serving(cpp_grpc::ServeCompletionQueue, cq.get(), &hello, &complex);
  int sig = 0;
  sigwait(&stop, &sig);
  // cancel every call now, then drain the queue: its thread frees each call's state and returns
  server->Shutdown(std::chrono::system_clock::now());
  cq->Shutdown();
  serving.join();
  return 0;
}

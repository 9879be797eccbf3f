'use strict';
// node_grpcjs: @grpc/grpc-js server for rpcprof. Loads ../proto/*.proto at startup with
// @grpc/proto-loader and serves /helloworld.Greeter/SayHello and /complexproto.Greeter/SayHello
// on 127.0.0.1:PORT (h2c). The app handlers are the named functions helloSayHello and
// complexSayHello; run with --perf-basic-prof so perf can name JS frames.
const path = require('path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

function parsePort(argv) {
  let port = 50051;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--port' && i + 1 < argv.length) port = Number(argv[++i]);
    else if (argv[i].startsWith('--port=')) port = Number(argv[i].slice(7));
    else throw new Error(`unknown argument: ${argv[i]}`);
  }
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`bad port: ${port}`);
  return port;
}

const PROTO_DIR = path.join(__dirname, '..', 'proto');
// Field names are all lower case, so keepCase changes nothing; int64 stays a Long so the echo
// re-encodes it losslessly; enums as numbers; unset fields stay absent (no defaults filled in).
const LOAD_OPTS = { keepCase: true, includeDirs: [PROTO_DIR] };

function loadService(file, pkg) {
  const def = protoLoader.loadSync(path.join(PROTO_DIR, file), LOAD_OPTS);
  return grpc.loadPackageDefinition(def)[pkg].Greeter.service;
}

// helloworld.Greeter/SayHello: message = "Hello " + name + "!"
function helloSayHello(call, callback) {
  callback(null, { message: 'Hello ' + call.request.name + '!' });
}

// complexproto.Greeter/SayHello: response = request, unchanged
function complexSayHello(call, callback) {
  callback(null, { response: call.request.request });
}

// V8's TurboFan inlines a hot handler into its grpc-js caller (its frame then vanishes from perf
// stacks) or inlines grpc-js's reply path into the handler (then framework time carries the handler's
// frame), depending on warm-up. %NeverOptimizeFunction keeps both handlers in baseline code, never
// inlined either way, so the app frame is exact. It needs node --allow-natives-syntax (server.yaml
// passes it); without that flag the handlers are left to V8's defaults.
function pinHandlerFrames(...handlers) {
  if (!process.execArgv.includes('--allow-natives-syntax')) return false;
  const neverOptimize = new Function('f', '%NeverOptimizeFunction(f);');
  for (const h of handlers) neverOptimize(h);
  return true;
}

function main() {
  const port = parsePort(process.argv.slice(2));
  const pinned = pinHandlerFrames(helloSayHello, complexSayHello);
  const server = new grpc.Server();
  server.addService(loadService('helloworld.proto', 'helloworld'), { SayHello: helloSayHello });
  server.addService(loadService('complexproto.proto', 'complexproto'), { SayHello: complexSayHello });

  const stop = () => {
    server.forceShutdown();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);

  server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (err, bound) => {
    if (err) {
      console.error(`node_grpcjs: bind 127.0.0.1:${port}: ${err.message}`);
      process.exit(1);
    }
    console.error(`node_grpcjs: listening on 127.0.0.1:${bound}` +
      (pinned ? ' (handlers kept out of TurboFan)' : ''));
  });
}

main();

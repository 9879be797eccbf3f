"""rpcprof.cli"""

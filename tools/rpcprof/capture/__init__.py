"""rpcprof.capture"""

"""rpcprof.analyze"""

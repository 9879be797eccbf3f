"""rpcprof.jobs"""

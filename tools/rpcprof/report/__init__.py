"""rpcprof.report"""

"""rpcprof.documents"""

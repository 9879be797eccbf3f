"""rpcprof.measure"""

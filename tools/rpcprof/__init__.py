"""rpcprof: why does RPC server A serve N times more requests per CPU than server B?

The package behind profile.sh and report.py. Data flows one way:
capture (perf / py-spy) -> fold (inferno) -> categorize (categorize.yaml) -> report.
"""

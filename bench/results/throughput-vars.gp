nseries = 9
series_titles = "cas-limit/none flashstock/async flashstock/sync redis-lua/none redis-lua/sync redis-lua-pipelined/none redis-lua-pipelined/sync mysql-cas/sync mysql-for-update/sync"
series_colours = "1 2 3 5 6 7 8 9 10"
workload_tics = "'hot' 4.0, 'zipf' 14.0, 'dedup' 24.0, 'mixed' 34.0"
nworkloads = 4

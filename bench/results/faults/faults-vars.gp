fault_window = 5.000
fault_rate = 5000.0
fault_titles = "flashstock/async/mariadb-sigstop flashstock/sync/mariadb-sigstop flashstock/async/serve-sigkill flashstock/sync/serve-sigkill flashstock/async/wal-slow flashstock/sync/wal-slow flashstock/async/broker-stop flashstock/sync/broker-stop redis-lua/aof-always/redis-sigkill redis-lua/aof-always/redis-sigstop"
fault_restarts = "0 0 1 1 0 0 1 1 1 0"
fault_blocks = 10

#!/usr/bin/env bash
# bench/run.sh: Turnstile and a private redis-server measured side by side
# in one run (issue 3). See bench/README.md for what each number means.
#
#   bench/run.sh                      # default run, a few minutes
#   ROUNDS=1 N=200000 KEYS=100000 bench/run.sh      # quick check
#   SCALING=1 bench/run.sh            # also key-count and connection scaling
#   PERSIST=1 bench/run.sh            # also persistence (issue 4): AOF throughput,
#                                     # snapshot/load times, p99 during snapshots
#   EXPIRE=1 bench/run.sh             # also mass expiry: RSS and p99 while KEYS keys expire
#
# Writes bench/out/results.csv, bench/RESULTS.md and bench/*.svg.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
BENCH=$ROOT/bench
OUT=$BENCH/out

ROUNDS=${ROUNDS:-3}            # interleaved rounds; medians are over these
N=${N:-300000}                 # requests per redis-benchmark run at -P 1
N_P16=${N_P16:-$((N * 5))}     # requests per run at -P 16
KEYS=${KEYS:-1000000}          # distinct keys for the memory measurement
SCALING=${SCALING:-0}          # 1: also run the scaling part
SCALING_MAX=${SCALING_MAX:-6}  # largest key count is 10^SCALING_MAX (6 or 7)
RUN_TIMEOUT=${RUN_TIMEOUT:-300} # seconds any one benchmark or load may take
PERSIST=${PERSIST:-0}          # 1: also run the persistence part (issue 4)
LOAD_TIMEOUT=${LOAD_TIMEOUT:-$((RUN_TIMEOUT * 3))} # seconds a restart may take to load its data
EXPIRE=${EXPIRE:-0}            # 1: also run the mass-expiry part (issue 3)
MAIN=${MAIN:-1}                # 0: skip the main throughput and memory tables (run only the parts asked for)
EXPIRE_TTL=${EXPIRE_TTL:-5}    # seconds the expiry part's keys live
EXPIRE_TIMEOUT=${EXPIRE_TIMEOUT:-60} # seconds to wait for all of them to be gone
# Scheduling priority of servers and clients: root raises it a little so
# other work on a shared machine disturbs the measurement less. NICE=0: off.
if ((EUID == 0)); then NICE=${NICE:--10}; else NICE=${NICE:-0}; fi
CLIENTS=50                     # -c of the main table
RANDKEYS=100000                # -r of the main table

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*"; }
die() { log "ERROR: $*" >&2; exit 1; }

for v in ROUNDS N N_P16 KEYS SCALING_MAX RUN_TIMEOUT LOAD_TIMEOUT EXPIRE_TTL EXPIRE_TIMEOUT; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer (got '${!v}')"
done
[[ $SCALING_MAX == 6 || $SCALING_MAX == 7 ]] || die "SCALING_MAX must be 6 or 7"
[[ $PERSIST == 0 || $PERSIST == 1 ]] || die "PERSIST must be 0 or 1"
[[ $EXPIRE == 0 || $EXPIRE == 1 ]] || die "EXPIRE must be 0 or 1"
[[ $MAIN == 0 || $MAIN == 1 ]] || die "MAIN must be 0 or 1"
[[ $NICE =~ ^-?[0-9]+$ ]] || die "NICE must be an integer (got '$NICE')"

# ---------------------------------------------------------------- setup --

install_missing() {
	local pkgs=()
	command -v redis-server >/dev/null || pkgs+=(redis-server)
	command -v redis-benchmark >/dev/null && command -v redis-cli >/dev/null || pkgs+=(redis-tools)
	command -v taskset >/dev/null && command -v lscpu >/dev/null || pkgs+=(util-linux)
	command -v timeout >/dev/null || pkgs+=(coreutils)
	((${#pkgs[@]})) || return 0
	log "installing ${pkgs[*]} (apt-get)"
	local sudo=
	if ((EUID != 0)); then
		command -v sudo >/dev/null || die "need root (or sudo) to install ${pkgs[*]}"
		sudo=sudo
	fi
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
}
install_missing
command -v go >/dev/null || die "Go (1.26 or later, see go.mod) must be on PATH; Debian's golang package is too old"

mkdir -p "$OUT"
rm -f "$OUT"/results.csv "$OUT"/commands.tsv "$OUT"/meta.txt "$OUT"/*.log

log "building turnstile, loadgen, benchctl, report"
go build -o "$OUT/turnstile" ./cmd/turnstile
go build -o "$OUT/loadgen" ./bench/cmd/loadgen
go build -o "$OUT/benchctl" ./bench/cmd/benchctl
go build -o "$OUT/report" ./bench/cmd/report

# Many connections (-c 1000) need file descriptors on both sides.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# in_cpu_list LIST CPU: is CPU in a kernel CPU list such as "0,64" or "0-1"?
in_cpu_list() {
	local part lo hi parts
	IFS=, read -ra parts <<<"$1"
	for part in "${parts[@]}"; do
		lo=${part%-*} hi=${part#*-}
		((lo <= $2 && $2 <= hi)) && return 0
	done
	return 1
}

NCPU=$(nproc)
if ((NCPU >= 2)); then
	# Servers on CPU 0; the client on CPU 1, unless CPU 1 is a hyperthread
	# of the same core as CPU 0 and another CPU is not.
	CLI_CPU=1
	siblings=$(cat /sys/devices/system/cpu/cpu0/topology/thread_siblings_list 2>/dev/null || echo 0)
	if in_cpu_list "$siblings" 1; then
		for c in $(seq 2 $((NCPU - 1))); do
			if ! in_cpu_list "$siblings" "$c"; then
				CLI_CPU=$c
				break
			fi
		done
	fi
	SRV_PIN=(taskset -c 0)
	CLI_PIN=(taskset -c "$CLI_CPU")
	PINNING="servers on CPU 0, redis-benchmark and loaders on CPU $CLI_CPU (taskset)"
else
	SRV_PIN=()
	CLI_PIN=()
	PINNING="none: only $NCPU CPU, so servers and redis-benchmark share it (not comparable to pinned runs)"
fi
if ((NICE != 0)); then
	SRV_PIN=(nice -n "$NICE" "${SRV_PIN[@]}")
	CLI_PIN=(nice -n "$NICE" "${CLI_PIN[@]}")
	PINNING+="; nice $NICE"
fi
log "pinning: $PINNING"

# --------------------------------------------------------------- servers --

TPID= RPID= TPORT= RPORT=
# Extra server instances of the persistence part, by name (t-always, r-rdb,
# ...), and the BGSAVE loop running next to a benchmark, if any.
declare -A IPID=() IPORT=()
BG_PID=

cleanup() {
	local pid
	for pid in $BG_PID $TPID $RPID "${IPID[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in $BG_PID $TPID $RPID "${IPID[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

free_port() {
	local p i
	for i in $(seq 1 200); do
		p=$((20000 + RANDOM % 40000))
		port_in_use "$p" || { echo "$p"; return 0; }
	done
	die "no free loopback port found"
}

# wait_ready PORT PID: PING until PONG, for at most 10 s.
wait_ready() {
	local i
	for i in $(seq 1 100); do
		kill -0 "$2" 2>/dev/null || return 1
		[[ $(timeout 2 redis-cli -h 127.0.0.1 -p "$1" PING 2>/dev/null) == PONG ]] && return 0
		sleep 0.1
	done
	return 1
}

stop_pid() {
	local pid=$1 i
	[[ -n $pid ]] || return 0
	kill "$pid" 2>/dev/null || return 0
	for i in $(seq 1 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

start_turnstile() {
	stop_pid "$TPID"
	TPID=
	local try
	for try in 1 2 3; do
		TPORT=$(free_port)
		# Like the Redis below: no snapshots, no append-only log.
		"${SRV_PIN[@]}" "$OUT/turnstile" --port "$TPORT" --bind 127.0.0.1 --loglevel warning \
			--save '' --appendonly no --dir "$OUT" >>"$OUT/turnstile.log" 2>&1 &
		TPID=$!
		wait_ready "$TPORT" "$TPID" && return 0
		stop_pid "$TPID"
	done
	die "turnstile did not start (see $OUT/turnstile.log)"
}

start_redis() {
	stop_pid "$RPID"
	RPID=
	local try
	for try in 1 2 3; do
		RPORT=$(free_port)
		"${SRV_PIN[@]}" redis-server --port "$RPORT" --bind 127.0.0.1 --save '' --appendonly no \
			--dir "$OUT" --logfile "$OUT/redis.log" --daemonize no --maxclients 10000 &
		RPID=$!
		wait_ready "$RPORT" "$RPID" && return 0
		stop_pid "$RPID"
	done
	die "redis-server did not start (see $OUT/redis.log)"
}

# Scripts are lost when redis-server restarts, so load them on every start.
load_scripts() {
	GCRA_SHA=$(rcli redis SCRIPT LOAD "$(cat "$BENCH/lua/gcra.lua")")
	TB_SHA=$(rcli redis SCRIPT LOAD "$(cat "$BENCH/lua/token_bucket.lua")")
	[[ $GCRA_SHA =~ ^[0-9a-f]{40}$ && $TB_SHA =~ ^[0-9a-f]{40}$ ]] ||
		die "SCRIPT LOAD failed: '$GCRA_SHA' '$TB_SHA'"
}

start_servers() {
	start_turnstile
	start_redis
	load_scripts
	log "turnstile pid $TPID port $TPORT; redis-server pid $RPID port $RPORT"
}

# port_of / pid_of NAME: the main servers (turnstile, redis) or an instance
# of the persistence part (t-none, r-rdb, ...).
port_of() {
	case $1 in
	turnstile) echo "$TPORT" ;;
	redis) echo "$RPORT" ;;
	*) echo "${IPORT[$1]}" ;;
	esac
}
pid_of() {
	case $1 in
	turnstile) echo "$TPID" ;;
	redis) echo "$RPID" ;;
	*) echo "${IPID[$1]}" ;;
	esac
}

# rcli SERVER ARGS...: one redis-cli command, bounded in time.
rcli() {
	local port
	port=$(port_of "$1")
	shift
	timeout 30 redis-cli -h 127.0.0.1 -p "$port" "$@"
}

alive() {
	local pid
	pid=$(pid_of "$1")
	kill -0 "$pid" 2>/dev/null || die "$1 (pid $pid) is not running any more (see $OUT/$1.log / redis.log)"
}

# start_inst NAME KIND WAIT LOG ARGS...: start a Turnstile (KIND turnstile,
# --loglevel notice, so that it logs its load times) or redis-server
# instance named NAME, pinned like the main servers, with ARGS. WAIT ping:
# wait for PONG (empty data directory). WAIT load: time from just before the
# start until EXISTS key:000000000000 stops answering LOADING, into
# LOAD_SECS (the key must exist). INST_CMD is the command line, for the report.
start_inst() {
	local name=$1 kind=$2 mode=$3 logf=$4
	shift 4
	stop_inst "$name"
	local try port pid t0 out cmd
	for try in 1 2 3; do
		port=$(free_port)
		if [[ $kind == turnstile ]]; then
			cmd=("$OUT/turnstile" --port "$port" --bind 127.0.0.1 --loglevel notice "$@")
		else
			cmd=(redis-server --port "$port" --bind 127.0.0.1 --daemonize no --maxclients 10000 --logfile "$logf" "$@")
		fi
		INST_CMD=$(printf '%q ' "${SRV_PIN[@]}" "${cmd[@]}")
		INST_CMD=${INST_CMD//$ROOT\//}
		INST_CMD=${INST_CMD% }
		t0=$(date +%s%N)
		"${SRV_PIN[@]}" "${cmd[@]}" >>"$logf" 2>&1 &
		pid=$!
		IPID[$name]=$pid
		IPORT[$name]=$port
		if [[ $mode == ping ]]; then
			wait_ready "$port" "$pid" && return 0
		elif out=$(timeout "$LOAD_TIMEOUT" "$OUT/benchctl" ready -port "$port" -since "$t0" -pid "$pid" \
			-timeout "${LOAD_TIMEOUT}s" 2>>"$logf"); then
			[[ ${out#* } == 1 ]] || die "$name: key:000000000000 missing after loading (EXISTS replied '${out#* }')"
			LOAD_SECS=${out%% *}
			return 0
		fi
		stop_inst "$name"
	done
	die "$name ($kind) did not start (see $logf)"
}

# stop_inst NAME: SIGTERM (neither server saves on it: --save ''; both
# flush their log), up to RUN_TIMEOUT s to exit, then SIGKILL.
stop_inst() {
	local pid=${IPID[$1]:-} i
	[[ -n $pid ]] || return 0
	unset "IPID[$1]" "IPORT[$1]"
	kill "$pid" 2>/dev/null || return 0
	for ((i = 0; i < RUN_TIMEOUT * 10; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

# ----------------------------------------------------------- measuring --

CSV=$OUT/results.csv
# file_bytes, server_s and bgsaves are the persistence part's: size of a
# snapshot or log, load time the server itself logged, snapshots completed
# during a benchmark run.
# rss_peak and rss_preload are the expiry part's: highest RSS seen while its
# keys were loaded, and RSS just before loading them (after the baseline probe).
CSV_COLS=round,server,workload,pipeline,clients,rps,p50,p99,p999,phase,keys,requests,seconds,server_cpu_s,rss_before,rss_after,used_before,used_after,file_bytes,server_s,bgsaves,rss_peak,rss_preload
echo "$CSV_COLS" >"$CSV"
NCOLS=$(awk -F, '{ print NF }' <<<"$CSV_COLS")

# csv_row FIELD...: quote every field that holds a comma or quote; missing
# trailing fields are left empty.
csv_row() {
	local out= f n=0
	for f in "$@"; do
		if [[ $f == *[,\"]* ]]; then f="\"${f//\"/\"\"}\""; fi
		out+="${out:+,}$f"
		n=$((n + 1))
	done
	for ((; n < NCOLS; n++)); do out+=","; done
	echo "$out" >>"$CSV"
}

# record_cmd PHASE SERVER WORKLOAD PIPELINE CLIENTS KEYS COMMAND...
record_cmd() {
	local head="$1"$'\t'"$2"$'\t'"$3"$'\t'"$4"$'\t'"$5"$'\t'"$6"
	shift 6
	printf '%s\t%s\n' "$head" "$*" >>"$OUT/commands.tsv"
}

# parse_bench FILE -> "rps p50 p99 p999 seconds" (latencies in ms). p99.9 is the smallest latency
# L that redis-benchmark prints with at least 99.9% of requests <= L (its
# percentile and cumulative-distribution lines), an upper bound.
parse_bench() {
	tr '\r' '\n' <"$1" | awk '
		/throughput summary:/ { rps = $3 }
		/requests completed in/ { secs = $5 }
		/^ *avg +min +p50 +p95 +p99 +max/ { want = 1; next }
		want && NF == 6 { p50 = $3; p99 = $5; want = 0 }
		/^[0-9.]+% <= [0-9.]+ milliseconds/ {
			pct = $1; sub(/%/, "", pct)
			if (pct + 0 >= 99.9 && (p999 == "" || $3 + 0 < p999 + 0)) p999 = $3
		}
		END {
			if (rps == "" || p50 == "") exit 1
			printf "%s %s %s %s %s\n", rps, p50, p99, (p999 == "" ? p99 : p999), (secs == "" ? 0 : secs)
		}'
}

RUNS=0
# Hooks of the persistence part: BENCH_INST names the instance to run against
# (default: SERVER itself); BENCH_BG names a function that bench calls with
# "start" just before redis-benchmark and "stop" just after, and that may set
# BENCH_TAIL to extra CSV fields (file_bytes server_s bgsaves).
BENCH_INST= BENCH_BG=
BENCH_TAIL=()
# bench ROUND PHASE SERVER WORKLOAD PIPELINE CLIENTS REQUESTS RANDKEYS FLUSH COMMAND...
bench() {
	local round=$1 phase=$2 server=$3 workload=$4 pipeline=$5 clients=$6 requests=$7 rkeys=$8 flush=$9
	shift 9
	local port inst=${BENCH_INST:-$server}
	port=$(port_of "$inst")
	alive "$inst"
	if [[ $flush == flush ]]; then
		[[ $(rcli "$inst" FLUSHALL) == OK ]] || die "FLUSHALL on $inst failed"
	fi
	local cmd=("${CLI_PIN[@]}" redis-benchmark -h 127.0.0.1 -p "$port" -c "$clients" -n "$requests"
		-r "$rkeys" -P "$pipeline" "$@")
	local raw=$OUT/last-benchmark.txt cpu0 cpu1
	RUNS=$((RUNS + 1))
	BENCH_TAIL=()
	cpu0=$(cpu_ticks "$(pid_of "$inst")")
	[[ -z $BENCH_BG ]] || "$BENCH_BG" start
	if ! timeout "$RUN_TIMEOUT" "${cmd[@]}" >"$raw" 2>&1; then
		tail -c 2000 "$raw" >&2 || true
		die "redis-benchmark failed or timed out after ${RUN_TIMEOUT}s: ${cmd[*]}"
	fi
	[[ -z $BENCH_BG ]] || "$BENCH_BG" stop
	if grep -q 'Error from server' "$raw"; then
		grep -m3 'Error from server' "$raw" >&2
		die "$inst answered errors to: ${cmd[*]}"
	fi
	cpu1=$(cpu_ticks "$(pid_of "$inst")")
	local parsed
	parsed=$(parse_bench "$raw") || die "cannot parse redis-benchmark output of: ${cmd[*]} (see $raw)"
	local rps p50 p99 p999 secs cpu
	read -r rps p50 p99 p999 secs <<<"$parsed"
	cpu=$(awk -v t=$((cpu1 - cpu0)) -v hz="$CLK_TCK" 'BEGIN { printf "%.2f", t / hz }')
	csv_row "$round" "$server" "$workload" "$pipeline" "$clients" "$rps" "$p50" "$p99" "$p999" \
		"$phase" "$rkeys" "$requests" "$secs" "$cpu" "" "" "" "" "${BENCH_TAIL[@]}"
	record_cmd "$phase" "$server" "$workload" "$pipeline" "$clients" "$rkeys" "${cmd[*]}"
	log "$(printf 'r%s %-6s %-9s %-16s P%-2s c%-4s %10s req/s  p50 %s p99 %s p99.9 %s ms  server CPU %ss/%ss' \
		"$round" "$phase" "$server" "$workload" "$pipeline" "$clients" "$rps" "$p50" "$p99" "$p999" "$cpu" "$secs")${BENCH_TAIL[2]:+  snapshots ${BENCH_TAIL[2]}}"
}

CLK_TCK=$(getconf CLK_TCK)

# cpu_ticks PID: user + system CPU time of the process so far, in clock ticks.
cpu_ticks() {
	sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'
}

rss_bytes() {
	awk '/^VmRSS:/ { print $2 * 1024 }' "/proc/$1/status"
}

used_memory() {
	rcli "$1" INFO memory | tr -d '\r' | awk -F: '$1 == "used_memory" { print $2 }'
}

# load_keys SERVER COUNT [INSTANCE [TTL]]: create COUNT distinct keys with
# loadgen | redis-cli --pipe (the loadgen mode is SERVER's), living TTL
# seconds (default 3600).
load_keys() {
	local server=$1 count=$2 port log=$OUT/pipe-$1.log
	port=$(port_of "${3:-$server}")
	if ! timeout "$RUN_TIMEOUT" "${CLI_PIN[@]}" "$OUT/loadgen" -mode "$server" -n "$count" -ttl "${4:-3600}" |
		timeout "$RUN_TIMEOUT" "${CLI_PIN[@]}" redis-cli -h 127.0.0.1 -p "$port" --pipe >"$log" 2>&1; then
		cat "$log" >&2
		die "loading $count keys into $server failed or timed out"
	fi
	grep -q "errors: 0, replies: $count\$" "$log" || { cat "$log" >&2; die "loading keys into $server: errors"; }
}

# memory ROUND PHASE SERVER COUNT [INSTANCE]: RSS and used_memory before and
# after loading (into INSTANCE, default SERVER's main instance).
memory() {
	local round=$1 phase=$2 server=$3 count=$4 inst=${5:-$3} pid port workload
	pid=$(pid_of "$inst")
	port=$(port_of "$inst")
	alive "$inst"
	if [[ $server == turnstile ]]; then
		workload="CL.THROTTLE k 0 1 3600"
		record_cmd "$phase" "$server" "$workload" "" "" "$count" \
			"${CLI_PIN[*]} bench/out/loadgen -mode turnstile -n $count | ${CLI_PIN[*]} redis-cli -h 127.0.0.1 -p $port --pipe   # CL.THROTTLE key:%012d 0 1 3600"
	else
		workload="SET k ns PX 3600000"
		record_cmd "$phase" "$server" "$workload" "" "" "$count" \
			"${CLI_PIN[*]} bench/out/loadgen -mode redis -n $count | ${CLI_PIN[*]} redis-cli -h 127.0.0.1 -p $port --pipe   # SET key:%012d <19-digit ns> PX 3600000"
	fi
	sleep 1
	local rss0 used0 rss1 used1 dbsize
	rss0=$(rss_bytes "$pid")
	used0=$(used_memory "$inst")
	load_keys "$server" "$count" "$inst"
	sleep 1
	rss1=$(rss_bytes "$pid")
	used1=$(used_memory "$inst")
	dbsize=$(rcli "$inst" DBSIZE)
	[[ $dbsize == "$count" ]] || log "WARNING: $server holds $dbsize keys after loading $count"
	csv_row "$round" "$server" "$workload" "" "" "" "" "" "" "$phase" "$count" "$count" "" "" \
		"$rss0" "$rss1" "$used0" "$used1"
	log "$(awk -v r="$round" -v ph="$phase" -v s="$server" -v n="$count" -v a="$rss0" -v b="$rss1" -v c="$used0" -v d="$used1" \
		'BEGIN { printf "r%s %-6s %-9s %9d keys: RSS %.1f B/key, used_memory %.1f B/key (RSS %d -> %d)", r, ph, s, n, (b - a) / n, (d - c) / n, a, b }')"
}

# ---------------------------------------------------------------- checks --

start_servers

# One call of each workload with redis-cli, so a wrong reply fails loudly
# before any timing is done.
check_reply() {
	local want=$1 got
	shift
	got=$(rcli "$@" | tr '\n' ' ')
	[[ $got == "$want" ]] || die "sanity check: '$*' replied '$got', want '$want'"
}
check_reply "0 16 15 -1 2 " turnstile CL.THROTTLE check:1 15 30 60
check_reply "0 16 15 -1 2 " redis EVALSHA "$GCRA_SHA" 1 check:1 15 30 60
check_reply "1 15 " redis EVALSHA "$TB_SHA" 1 check:2 0.5 16 1
check_reply "1 " turnstile INCR check:3
check_reply "1 " redis INCR check:3

# ------------------------------------------------------------------ meta --

# persist_fs: the file system the persistence part writes to (bench/out).
persist_fs() {
	local src fstype opts target
	read -r target src fstype opts < <(findmnt -n -T "$OUT" -o TARGET,SOURCE,FSTYPE,OPTIONS)
	echo "bench/out/persist on $fstype ($src mounted on $target, $opts)"
}

# sync_write_ms: what one small synchronous write costs on that disk: 500
# writes of 4 KiB with O_DSYNC (dd oflag=dsync), mean per write.
sync_write_ms() {
	local f=$OUT/.sync-probe secs
	secs=$(dd if=/dev/zero of="$f" bs=4096 count=500 oflag=dsync 2>&1 |
		awk '{ for (i = 1; i < NF; i++) if ($i == "copied,") print $(i + 1) }')
	rm -f "$f"
	awk -v s="$secs" 'BEGIN { if (s == "") print "unknown"; else printf "%.3f ms per 4 KiB write+sync (dd oflag=dsync, mean of 500)\n", s * 1000 / 500 }'
}

{
	echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1)"
	echo "nproc: $NCPU"
	echo "kernel: $(uname -sr)"
	echo "memory: $(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
	echo "redis: $(redis-server --version)"
	echo "redis-benchmark: $(redis-benchmark --version)"
	echo "go: $(go version)"
	echo "turnstile: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet HEAD -- . 2>/dev/null || echo ' (with local changes)')"
	echo "pinning: $PINNING"
	echo "settings: ROUNDS=$ROUNDS N=$N N_P16=$N_P16 KEYS=$KEYS SCALING=$SCALING SCALING_MAX=$SCALING_MAX PERSIST=$PERSIST EXPIRE=$EXPIRE MAIN=$MAIN"
	echo "main: -c $CLIENTS -r $RANDKEYS, FLUSHALL before every run"
	if [[ $PERSIST == 1 ]]; then
		echo "persistence files: $(persist_fs)"
		echo "disk sync writes: $(sync_write_ms)"
	fi
	echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$OUT/meta.txt"

# ------------------------------------------------------- main throughput --

# Workloads of the main table: SERVER|NAME|ARGS. Listed so that the servers
# alternate where they can; each round starts at a different entry.
main_workloads() {
	printf '%s\n' \
		"turnstile|CL.THROTTLE|CL.THROTTLE key:__rand_int__ 15 30 60" \
		"redis|INCR|INCR key:__rand_int__" \
		"turnstile|INCR|INCR key:__rand_int__" \
		"redis|SET|SET key:__rand_int__ v" \
		"redis|Lua GCRA|EVALSHA $GCRA_SHA 1 key:__rand_int__ 15 30 60" \
		"redis|Lua token bucket|EVALSHA $TB_SHA 1 key:__rand_int__ 0.5 16 1"
}

T0=$SECONDS
for round in $(seq 1 "$ROUNDS"); do
	[[ $MAIN == 1 ]] || break
	mapfile -t wl < <(main_workloads)
	count=${#wl[@]}
	for pipeline in 1 16; do
		requests=$N
		((pipeline == 1)) || requests=$N_P16
		for i in $(seq 0 $((count - 1))); do
			IFS='|' read -r server name args <<<"${wl[$(((i + round - 1) % count))]}"
			read -ra argv <<<"$args"
			bench "$round" main "$server" "$name" "$pipeline" "$CLIENTS" "$requests" "$RANDKEYS" flush "${argv[@]}"
		done
	done
done
[[ $MAIN == 1 ]] && log "main table done in $((SECONDS - T0)) s"

# ---------------------------------------------------------------- memory --

if [[ $MAIN == 1 ]]; then
	# Fresh processes, so neither has heap left over from the runs above.
	start_servers
	memory 1 memory turnstile "$KEYS"
	memory 1 memory redis "$KEYS"
fi

# --------------------------------------------------------------- scaling --

if [[ $SCALING == 1 ]]; then
	T0=$SECONDS
	# Live keys: load K keys with a 1 h TTL, then run a limiter whose calls
	# stay allowed (max_burst 1000000, 1 per hour), so every call writes and
	# no key expires during the run. Every key count has its own fresh
	# Turnstile and Redis instance, all loaded first; each round then runs
	# every count in turn, so the 10^7 / 10^5 ratio compares runs a minute
	# apart, not several minutes (on this shared machine one server with
	# 10^7 keys ran between 670k and 890k req/s from one run to the next).
	# Idle instances use no CPU to speak of; Redis at 10^7 keys holds about
	# 1.5 GB.
	counts=()
	for exp in $(seq 3 "$SCALING_MAX"); do
		[[ $exp == 4 ]] || counts+=($((10 ** exp)))
	done
	for k in "${counts[@]}"; do
		start_inst "t-$k" turnstile ping "$OUT/turnstile.log" --save '' --appendonly no --dir "$OUT"
		start_inst "r-$k" redis ping "$OUT/redis.log" --save '' --appendonly no --dir "$OUT"
		[[ $(rcli "r-$k" SCRIPT LOAD "$(cat "$BENCH/lua/gcra.lua")") == "$GCRA_SHA" ]] ||
			die "SCRIPT LOAD into r-$k failed"
		memory 1 keys turnstile "$k" "t-$k"
		memory 1 keys redis "$k" "r-$k"
	done
	for round in $(seq 1 "$ROUNDS"); do
		for k in "${counts[@]}"; do
			BENCH_INST=t-$k bench "$round" keys turnstile "CL.THROTTLE" 16 "$CLIENTS" "$N_P16" "$k" keep \
				CL.THROTTLE key:__rand_int__ 1000000 1 3600
			BENCH_INST=r-$k bench "$round" keys redis "Lua GCRA" 16 "$CLIENTS" "$N_P16" "$k" keep \
				EVALSHA "$GCRA_SHA" 1 key:__rand_int__ 1000000 1 3600
		done
	done
	for k in "${counts[@]}"; do
		stop_inst "t-$k"
		stop_inst "r-$k"
	done

	# Connections: the main table's workloads at -P 1 with 1 ... 1000 clients.
	start_servers
	for round in $(seq 1 "$ROUNDS"); do
		for c in 1 10 100 1000; do
			requests=$N
			((c >= 100)) || requests=$((N / (c == 1 ? 10 : 2)))
			bench "$round" conns turnstile "CL.THROTTLE" 1 "$c" "$requests" "$RANDKEYS" flush \
				CL.THROTTLE key:__rand_int__ 15 30 60
			bench "$round" conns redis "INCR" 1 "$c" "$requests" "$RANDKEYS" flush \
				INCR key:__rand_int__
			bench "$round" conns redis "Lua GCRA" 1 "$c" "$requests" "$RANDKEYS" flush \
				EVALSHA "$GCRA_SHA" 1 key:__rand_int__ 15 30 60
		done
	done
	log "scaling done in $((SECONDS - T0)) s"
fi

# ----------------------------------------------------------- expiry --

# Issue 3: "10^6 keys that all expire release their memory (RSS back within
# 20% of the start) without a latency spike above 2x p99". Per round and
# server, on a fresh process: RSS at start; a latency probe (the baseline);
# KEYS keys loaded with an EXPIRE_TTL-second TTL; the peak RSS; the same
# probe started when the keys begin to expire; then wait until DBSIZE is 0
# and RSS has stopped falling, and read the final RSS.
EXPIRE_PROBE_KEYS=1000  # -r of the probe: a few keys, so it adds little memory

# expire_probe: the probe's command. CL.THROTTLE with a 1 s period keeps
# each probe key for at most ~0.5 s, so DBSIZE can reach 0 soon after it.
expire_probe() {
	if [[ $1 == turnstile ]]; then
		echo "CL.THROTTLE probe:__rand_int__ 15 30 1"
	else
		echo "SET probe:__rand_int__ v PX 1000"
	fi
}

# now_ns: wall clock in ns.
now_ns() { date +%s%N; }

# expire_one ROUND SERVER
expire_one() {
	local round=$1 server=$2 pid workload probe rss0 used0 pre peak rss t0 t1 tdead left secs i last still
	if [[ $server == turnstile ]]; then
		start_turnstile
		workload="CL.THROTTLE k 0 1 $EXPIRE_TTL"
	else
		start_redis
		workload="SET k ns PX $((EXPIRE_TTL * 1000))"
	fi
	pid=$(pid_of "$server")
	read -ra probe <<<"$(expire_probe "$server")"
	sleep 1
	rss0=$(rss_bytes "$pid")
	used0=$(used_memory "$server")
	# Warm-up, not recorded: a fresh process's first run also pays for its
	# first collections and heap growth, which would inflate the baseline.
	timeout "$RUN_TIMEOUT" "${CLI_PIN[@]}" redis-benchmark -h 127.0.0.1 -p "$(port_of "$server")" -c "$CLIENTS" \
		-n "$((N / 3))" -r "$EXPIRE_PROBE_KEYS" -P 1 "${probe[@]}" >/dev/null 2>&1 || die "warm-up probe on $server failed"
	bench "$round" expire "$server" "probe idle" 1 "$CLIENTS" "$N" "$EXPIRE_PROBE_KEYS" keep "${probe[@]}"
	sleep 1 # the probe's keys expire
	pre=$(rss_bytes "$pid")
	t0=$(now_ns)
	load_keys "$server" "$KEYS" "$server" "$EXPIRE_TTL"
	t1=$(now_ns)
	peak=$(rss_bytes "$pid")
	(((t1 - t0) / 1000000000 < EXPIRE_TTL)) ||
		log "WARNING: loading $KEYS keys took longer than their TTL ($EXPIRE_TTL s): raise EXPIRE_TTL"
	# The first keys expire TTL after the load started; start the probe then.
	tdead=$((t0 + EXPIRE_TTL * 1000000000))
	while (($(now_ns) < tdead)); do
		rss=$(rss_bytes "$pid")
		((rss > peak)) && peak=$rss
		sleep 0.1
	done
	left=$(rcli "$server" DBSIZE)
	# DBSIZE every 0.1 s next to the probe, until no more keys are left
	# than the probe's own: then at least 99.9% of the loaded keys are gone.
	# benchctl keeps one connection and starts no processes meanwhile: a
	# shell loop starting redis-cli every 0.1 s doubled the probe's p99.
	local trace=$OUT/expire-dbsize-$server.txt
	"${CLI_PIN[@]}" "$OUT/benchctl" dbsize-trace -port "$(port_of "$server")" -since "$tdead" \
		-until "$EXPIRE_PROBE_KEYS" -timeout "$(((EXPIRE_TIMEOUT * 1000000000 - ($(now_ns) - tdead)) / 1000000))ms" >"$trace" &
	BG_PID=$!
	bench "$round" expire "$server" "probe expiring" 1 "$CLIENTS" "$N" "$EXPIRE_PROBE_KEYS" keep "${probe[@]}"
	log "r$round expire $server: $left of $KEYS keys left when the probe started, $(rcli "$server" DBSIZE) when it ended"
	wait "$BG_PID" || log "WARNING: the DBSIZE trace on $server failed"
	BG_PID=
	secs=$(awk -v k="$EXPIRE_PROBE_KEYS" '$2 <= k { printf "%.1f", $1 / 1e9; found = 1; exit } END { if (!found) print "" }' "$trace")
	[[ -n $secs ]] || log "WARNING: $server still held more than $EXPIRE_PROBE_KEYS keys ${EXPIRE_TIMEOUT} s after the first expiry"
	# Wait for the keyspace to empty ...
	while :; do
		left=$(rcli "$server" DBSIZE)
		[[ $left == 0 ]] && break
		(($(now_ns) - tdead < EXPIRE_TIMEOUT * 1000000000)) || break
		sleep 0.2
	done
	[[ $left == 0 ]] || log "WARNING: $server still holds $left keys ${EXPIRE_TIMEOUT} s after they expired"
	# ... then for RSS to stop falling: 3 s without a drop, at most 20 s.
	last=$(rss_bytes "$pid") still=0
	for ((i = 0; i < 20 && still < 3; i++)); do
		sleep 1
		rss=$(rss_bytes "$pid")
		if ((rss < last)); then still=0; else still=$((still + 1)); fi
		last=$rss
	done
	csv_row "$round" "$server" "$workload" "" "" "" "" "" "" expire "$KEYS" "$KEYS" "$secs" "" \
		"$rss0" "$rss" "$used0" "$(used_memory "$server")" "" "" "" "$peak" "$pre"
	record_cmd expire "$server" "$workload" "" "" "$KEYS" \
		"${CLI_PIN[*]} bench/out/loadgen -mode $server -n $KEYS -ttl $EXPIRE_TTL | ${CLI_PIN[*]} redis-cli -h 127.0.0.1 -p $(port_of "$server") --pipe"
	log "$(awk -v r="$round" -v s="$server" -v a="$rss0" -v q="$pre" -v p="$peak" -v b="$rss" -v t="$secs" -v n="$KEYS" \
		'BEGIN { printf "r%s expire %-9s %d keys: RSS start %.1f MiB, before load %.1f MiB, peak %.1f MiB, after expiry %.1f MiB (%+.0f%% of start, %+.0f%% of before load); 99.9%% gone %s s after the first expiry", r, s, n, a / 1048576, q / 1048576, p / 1048576, b / 1048576, (b - a) * 100 / a, (b - q) * 100 / q, t }')"
	if [[ $server == turnstile ]]; then stop_pid "$TPID"; TPID=; else stop_pid "$RPID"; RPID=; fi
}

if [[ $EXPIRE == 1 ]]; then
	T0=$SECONDS
	for round in $(seq 1 "$ROUNDS"); do
		order=(turnstile redis)
		((round % 2)) || order=(redis turnstile)
		for server in "${order[@]}"; do
			expire_one "$round" "$server"
		done
	done
	log "expiry done in $((SECONDS - T0)) s"
fi

# ----------------------------------------------------------- persistence --

# Issue 4's proof bullets: throughput with the append-only log against no
# persistence, snapshot and load times, p99 while snapshots run. Data
# directories are fresh, under bench/out/persist: on the disk the repository
# is on, not a tmpfs, since fsync is what is being measured.
PDIR=$OUT/persist
PLOG=$OUT/persist-logs

# dir_bytes DIR: bytes in the regular files under DIR.
dir_bytes() {
	find "$1" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'
}

# fresh_dir NAME: an empty data directory for instance NAME.
fresh_dir() {
	rm -rf "${PDIR:?}/$1"
	mkdir -p "$PDIR/$1"
	echo "$PDIR/$1"
}

# server_load_secs KIND LOG: the load time the server logged on its last start.
server_load_secs() {
	if [[ $1 == turnstile ]]; then
		grep -E 'msg="(snapshot|append-only log) loaded"' "$2" | tail -1 | sed -n 's/.* seconds=\([0-9.e+-]*\).*/\1/p'
	else
		sed -n 's/.*DB loaded from [a-z ]*: \([0-9.]*\) seconds.*/\1/p' "$2" | tail -1
	fi
}

secs_since() { awk -v a="$1" -v b="$(date +%s%N)" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'; }

inst_of() { echo "${1:0:1}-$2"; } # inst_of turnstile rdb -> t-rdb

# The policies of part 1: label and flags (both servers take the same ones).
PCONFIGS=(none everysec always)
pcfg_label() {
	case $1 in
	none) echo "appendonly no" ;;
	*) echo "appendfsync $1" ;;
	esac
}
pcfg_args() {
	case $1 in
	none) echo "--appendonly no" ;;
	*) echo "--appendonly yes --appendfsync $1" ;;
	esac
}

# Part 1: throughput with each policy, as a ratio to no persistence in the
# same round. Every round starts six fresh instances (Turnstile and Redis,
# three policies each, on fresh directories) and runs each workload on the
# three policies back to back, rotating which goes first.
persist_throughput() {
	local round cfg kind inst dir i j pipeline requests server name args argv cargs
	local wls=("turnstile|CL.THROTTLE|CL.THROTTLE key:__rand_int__ 15 30 60"
		"redis|INCR|INCR key:__rand_int__"
		"turnstile|INCR|INCR key:__rand_int__")
	for round in $(seq 1 "$ROUNDS"); do
		for cfg in "${PCONFIGS[@]}"; do
			for kind in turnstile redis; do
				inst=$(inst_of "$kind" "$cfg")
				dir=$(fresh_dir "$inst")
				read -ra cargs <<<"$(pcfg_args "$cfg")"
				start_inst "$inst" "$kind" ping "$PLOG/$inst-r$round.log" --dir "$dir" --save '' "${cargs[@]}"
				record_cmd persist "$kind" "server [$(pcfg_label "$cfg")]" "" "" "" "$INST_CMD"
			done
		done
		log "persistence r$round: servers $(for i in "${!IPID[@]}"; do printf '%s=%s ' "$i" "${IPORT[$i]}"; done)"
		for pipeline in 1 16; do
			requests=$N
			((pipeline == 1)) || requests=$N_P16
			for i in 0 1 2; do
				IFS='|' read -r server name args <<<"${wls[$(((i + round - 1) % 3))]}"
				read -ra argv <<<"$args"
				for j in 0 1 2; do
					cfg=${PCONFIGS[$(((j + round - 1) % 3))]}
					BENCH_INST=$(inst_of "$server" "$cfg")
					bench "$round" persist "$server" "$name [$(pcfg_label "$cfg")]" "$pipeline" "$CLIENTS" \
						"$requests" "$RANDKEYS" flush "${argv[@]}"
				done
				BENCH_INST=
			done
		done
		for cfg in "${PCONFIGS[@]}"; do
			for kind in turnstile redis; do
				inst=$(inst_of "$kind" "$cfg")
				stop_inst "$inst"
				rm -rf "${PDIR:?}/$inst"
			done
		done
	done
}

# load_into KIND INST COUNT PHASE: load COUNT keys into instance INST and
# record the command.
load_into() {
	local what="CL.THROTTLE key:%012d 0 1 3600"
	[[ $1 == turnstile ]] || what="SET key:%012d <19-digit ns> PX 3600000"
	record_cmd "$4" "$1" "load keys" "" "" "$3" \
		"${CLI_PIN[*]} bench/out/loadgen -mode $1 -n $3 | ${CLI_PIN[*]} redis-cli -h 127.0.0.1 -p ${IPORT[$2]} --pipe   # $what"
	local t0
	t0=$(date +%s%N)
	load_keys "$1" "$3" "$2"
	log "$2: loaded $3 keys in $(secs_since "$t0") s"
}

# restart_timed KIND INST DIR LOGNAME WORKLOAD ROUND KEYS ARGS...: stop INST,
# restart it on DIR with ARGS, time the load and write a CSV row: restart
# until ready, the server's own load time, bytes of DIR.
restart_timed() {
	local kind=$1 inst=$2 dir=$3 logf=$PLOG/$4.log workload=$5 round=$6 keys=$7
	shift 7
	stop_inst "$inst"
	local bytes srv dbsize
	bytes=$(dir_bytes "$dir")
	: >"$logf"
	start_inst "$inst" "$kind" load "$logf" --dir "$dir" "$@"
	srv=$(server_load_secs "$kind" "$logf")
	dbsize=$(rcli "$inst" DBSIZE)
	[[ $dbsize == "$keys" ]] || die "$inst holds $dbsize keys after loading, want $keys (see $logf)"
	csv_row "$round" "$kind" "$workload" "" "" "" "" "" "" snapshot "$keys" "$keys" "$LOAD_SECS" "" "" "" "" "" \
		"$bytes" "$srv"
	record_cmd snapshot "$kind" "$workload" "" "" "$keys" \
		"kill -TERM <pid>; $INST_CMD  # then EXISTS key:000000000000 until not LOADING (bench/out/benchctl ready)"
	log "r$round $inst $keys keys: $workload: ready after $LOAD_SECS s (server log: ${srv:-?} s), files $bytes B"
}

# Part 2a: SAVE and restart from the snapshot, KEYS keys, ROUNDS times each.
persist_snapshot() {
	local k=$1 round kind inst dir t0 reply secs file order
	for kind in turnstile redis; do
		inst=$(inst_of "$kind" rdb)
		dir=$(fresh_dir "$inst")
		start_inst "$inst" "$kind" ping "$PLOG/$inst-$k.log" --dir "$dir" --save '' --appendonly no
		record_cmd snapshot "$kind" "server [snapshot]" "" "" "$k" "$INST_CMD"
		load_into "$kind" "$inst" "$k" snapshot
	done
	for round in $(seq 1 "$ROUNDS"); do
		order=(turnstile redis)
		((round % 2)) || order=(redis turnstile)
		for kind in "${order[@]}"; do
			inst=$(inst_of "$kind" rdb)
			file=$PDIR/$inst/dump.rdb
			[[ $kind == redis ]] || file=$PDIR/$inst/dump.tsr
			t0=$(date +%s%N)
			reply=$(timeout "$RUN_TIMEOUT" redis-cli -h 127.0.0.1 -p "${IPORT[$inst]}" SAVE)
			secs=$(secs_since "$t0")
			[[ $reply == OK ]] || die "SAVE on $inst replied '$reply'"
			csv_row "$round" "$kind" SAVE "" "" "" "" "" "" snapshot "$k" "$k" "$secs" "" "" "" "" "" \
				"$(stat -c %s "$file")"
			record_cmd snapshot "$kind" SAVE "" "" "$k" \
				"timeout $RUN_TIMEOUT redis-cli -h 127.0.0.1 -p ${IPORT[$inst]} SAVE   # wall clock around it (date +%s%N)"
			log "r$round $inst $k keys: SAVE $secs s, $(stat -c %s "$file") B"
		done
		for kind in "${order[@]}"; do
			inst=$(inst_of "$kind" rdb)
			restart_timed "$kind" "$inst" "$PDIR/$inst" "$inst-$k-r$round" "load snapshot" "$round" "$k" \
				--save '' --appendonly no
		done
	done
}

# bgsave_loop start|stop: BENCH_BG hook that keeps BGSAVE running on
# BENCH_INST for the whole redis-benchmark run (bench/out/benchctl
# bgsave-loop: BGSAVE, wait for rdb_bgsave_in_progress:0, repeat).
bgsave_loop() {
	local out=$OUT/bgsave-loop.txt
	if [[ $1 == start ]]; then
		timeout "$RUN_TIMEOUT" "${CLI_PIN[@]}" "$OUT/benchctl" bgsave-loop -port "$(port_of "$BENCH_INST")" \
			-timeout "${RUN_TIMEOUT}s" >"$out" 2>&1 &
		BG_PID=$!
		return
	fi
	kill -TERM "$BG_PID" 2>/dev/null || true
	wait "$BG_PID" || { cat "$out" >&2; die "BGSAVE loop on $BENCH_INST failed"; }
	BG_PID=
	local n
	n=$(sed -n 's/^snapshots \([0-9]*\) .*/\1/p' "$out")
	[[ -n $n ]] || { cat "$out" >&2; die "BGSAVE loop on $BENCH_INST printed no count"; }
	((n > 0)) || die "no BGSAVE completed on $BENCH_INST during the run: make the run longer (N)"
	BENCH_TAIL=("" "" "$n")
}

# Part 3: p99 at -P 1 with KEYS keys loaded, idle and while snapshots run
# back to back. Calls that write loaded keys: Turnstile CL.THROTTLE with a
# limit every call passes (like the key-scaling part), Redis INCR on the
# loaded values.
persist_snaplat() {
	local k=$1 round kind inst state states
	for round in $(seq 1 "$ROUNDS"); do
		states=(idle "BGSAVE loop")
		((round % 2)) || states=("BGSAVE loop" idle)
		for kind in turnstile redis; do
			BENCH_INST=$(inst_of "$kind" rdb)
			for state in "${states[@]}"; do
				[[ $state == idle ]] || BENCH_BG=bgsave_loop
				if [[ $kind == turnstile ]]; then
					bench "$round" snaplat turnstile "CL.THROTTLE [$state]" 1 "$CLIENTS" "$N" "$k" keep \
						CL.THROTTLE key:__rand_int__ 1000000 1 3600
				else
					bench "$round" snaplat redis "INCR [$state]" 1 "$CLIENTS" "$N" "$k" keep \
						INCR key:__rand_int__
				fi
				BENCH_BG=
			done
		done
		BENCH_INST=
	done
	record_cmd snaplat turnstile "BGSAVE loop" "" "" "$k" \
		"${CLI_PIN[*]} bench/out/benchctl bgsave-loop -port <port>   # during the [BGSAVE loop] runs; SIGTERM after"
}

# Part 2b: the append-only log. Load KEYS keys with the log on (everysec, no
# automatic rewrite), restart once on the log as written, then ROUNDS times:
# BGREWRITEAOF (until aof_rewrite_in_progress:0), restart on the rewritten log.
persist_aof() {
	local k=$1 round kind inst dir secs order
	local args=(--save '' --appendonly yes --appendfsync everysec --auto-aof-rewrite-percentage 0)
	for kind in turnstile redis; do
		inst=$(inst_of "$kind" aof)
		dir=$(fresh_dir "$inst")
		start_inst "$inst" "$kind" ping "$PLOG/$inst-$k.log" --dir "$dir" "${args[@]}"
		record_cmd snapshot "$kind" "server [append-only log]" "" "" "$k" "$INST_CMD"
		load_into "$kind" "$inst" "$k" snapshot
	done
	for kind in turnstile redis; do
		inst=$(inst_of "$kind" aof)
		restart_timed "$kind" "$inst" "$PDIR/$inst" "$inst-$k-written" "load AOF (as written)" 1 "$k" "${args[@]}"
	done
	for round in $(seq 1 "$ROUNDS"); do
		order=(turnstile redis)
		((round % 2)) || order=(redis turnstile)
		for kind in "${order[@]}"; do
			inst=$(inst_of "$kind" aof)
			secs=$(timeout "$RUN_TIMEOUT" "$OUT/benchctl" rewrite -port "${IPORT[$inst]}" -timeout "${RUN_TIMEOUT}s") ||
				die "BGREWRITEAOF on $inst failed"
			csv_row "$round" "$kind" BGREWRITEAOF "" "" "" "" "" "" snapshot "$k" "$k" "$secs"
			record_cmd snapshot "$kind" BGREWRITEAOF "" "" "$k" \
				"bench/out/benchctl rewrite -port ${IPORT[$inst]}   # BGREWRITEAOF, then INFO persistence until aof_rewrite_in_progress:0"
			log "r$round $inst $k keys: BGREWRITEAOF $secs s"
		done
		for kind in "${order[@]}"; do
			inst=$(inst_of "$kind" aof)
			restart_timed "$kind" "$inst" "$PDIR/$inst" "$inst-$k-r$round" "load AOF (rewritten)" "$round" "$k" "${args[@]}"
		done
	done
}

if [[ $PERSIST == 1 ]]; then
	T0=$SECONDS
	# The main servers are not needed any more.
	stop_pid "$TPID"
	stop_pid "$RPID"
	TPID= RPID=
	rm -rf "${PDIR:?}" "${PLOG:?}"
	mkdir -p "$PDIR" "$PLOG"
	persist_throughput
	# Snapshot and log timings at KEYS keys (10^6 by default), and at 10^7
	# with SCALING_MAX=7; the latency part at KEYS keys.
	pcounts=("$KEYS")
	((SCALING_MAX == 7 && KEYS < 10000000)) && pcounts+=(10000000)
	for k in "${pcounts[@]}"; do
		persist_snapshot "$k"
		((k == KEYS)) && persist_snaplat "$k"
		stop_inst t-rdb
		stop_inst r-rdb
		rm -rf "${PDIR:?}"/?-rdb
		persist_aof "$k"
		stop_inst t-aof
		stop_inst r-aof
		rm -rf "${PDIR:?}"/?-aof
	done
	log "persistence done in $((SECONDS - T0)) s"
fi

cleanup
TPID= RPID=

# ---------------------------------------------------------------- report --

echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/meta.txt"
echo "duration: $((SECONDS / 60)) min $((SECONDS % 60)) s, $RUNS redis-benchmark runs" >>"$OUT/meta.txt"
cp "$CSV" "$BENCH/results.csv"
log "$RUNS benchmark runs; writing bench/RESULTS.md and charts"
"$OUT/report" -csv "$BENCH/results.csv" -meta "$OUT/meta.txt" -commands "$OUT/commands.tsv" -dir "$BENCH"
log "done in $((SECONDS / 60)) min $((SECONDS % 60)) s: bench/RESULTS.md, bench/results.csv, bench/*.svg"

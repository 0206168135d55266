# napi-instance: one NAPI instance made threaded on its own (`napi-set` with `threaded`, 6.17 and
# later: the interface's `threaded` switch stays off, so only the kernel's netdev family tells
# that the instance has a thread). Its thread must follow its queue IRQ, as the threads of the
# interface's switch do (35-napi-threads.sh): the instance of eth0's queue 2 (vmxnet3 adds one
# instance per queue in queue order, and the kernel numbers them as added), so the thread's rank
# among all the interface's instances, not among its threads, gives its queue. `plan --json`
# lists the instance with its own threaded mode and its thread. On a kernel without per-instance
# threaded (before 6.17) there is nothing to do: said, and passed.
SCEN=napi-instance
write_config '[global]
reconcile_interval = "2s"'
kill -HUP "$DAEMON_PID"
sleep 1
log_mark
set -- $(napi list eth0 2>/tmp/napi.err | awk '{ print $2 }' | sort -n)
NAPI_IDS="$*"
if [ "$(count "$NAPI_IDS")" -lt 3 ] || ! napi threaded "$3" 1 > /tmp/napi.err 2>&1; then
  measure result "no per-instance threaded NAPI on $(uname -r): $(head -c 120 /tmp/napi.err 2>/dev/null)"
  result threaded PASS "not on $(uname -r) (per-instance threaded came with 6.17)"
  result follows PASS "not on $(uname -r)"
  result planned PASS "not on $(uname -r)"
else
  NAPI_ID=$3
  set -- $NIC_IRQS; Q2_IRQ=$3
  instance_thread() { # REPLY = the pid of napi/eth0-NAPI_ID
    local d c
    for d in /proc/[0-9]*; do c=""; read -r c < $d/comm 2>/dev/null; [ "$c" = "napi/eth0-$NAPI_ID" ] && { REPLY=${d#/proc/}; return 0; }; done
    REPLY=""; return 1
  }
  check threaded "napi-set: instance $NAPI_ID (queue 2) threaded, the interface's switch off" -- \
    eval 'instance_thread && [ "$(cat /sys/class/net/eth0/threaded)" = 0 ]'
  PID=$REPLY
  follows() {
    local m
    read -r m < /proc/irq/$Q2_IRQ/smp_affinity_list
    thread_cpus "$PID"
    [ "$REPLY" = "$m" ] && REPLY="thread $PID on $m, irq $Q2_IRQ on $m" || { REPLY="thread $PID on '$REPLY', irq $Q2_IRQ on $m"; return 1; }
  }
  now; T0=$NOW
  i=0; while ! follows && [ $i -lt 500 ]; do usleep 20000; i=$((i + 1)); done
  now; measure follow_ms $((NOW - T0))
  check follows "its thread on queue 2's IRQ CPUs (the next pass: reconcile at 2 s)" -- follows
  planned() {
    $IRQWISE --config $CFG plan --json > /tmp/plan.json 2>/dev/null
    awk -v dump=1 -f /guest/planrows.awk /tmp/plan.json > /tmp/plan.dump
    local path
    path=$(awk -v id="$NAPI_ID" '$1 ~ /\.napi\.[0-9]+\.id$/ && $2 == id { sub(/\.id$/, "", $1); print $1; exit }' /tmp/plan.dump)
    [ -n "$path" ] || { REPLY="no napi entry $NAPI_ID in plan --json"; return 1; }
    local t p irq
    t=$(awk -v k="$path.threaded" '$1 == k { print $2 }' /tmp/plan.dump)
    p=$(awk -v k="$path.pid" '$1 == k { print $2 }' /tmp/plan.dump)
    irq=$(awk -v k="$path.irq" '$1 == k { print $2 }' /tmp/plan.dump)
    REPLY="napi $NAPI_ID: threaded $t, pid $p, irq $irq"
    [ "$t" = enabled ] && [ "$p" = "$PID" ]
  }
  check planned "plan --json lists the instance with its own threaded mode and thread" -- planned
  measure planned "$REPLY"
  napi threaded "$NAPI_ID" 0 2>/dev/null
fi
write_config ''
kill -HUP "$DAEMON_PID"
sleep 1
check no_errors "daemon log has no ERROR/WARN lines" -- no_log_problems

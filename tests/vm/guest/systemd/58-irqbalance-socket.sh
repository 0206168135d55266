# irqbalance-socket: irqbalance's control socket under the hardened unit (issue 56). A drop-in
# with irqbalance_socket = true and a restart (the socket is opened at start): the socket must be
# at /run/irqbalance/irqbalance<MainPID>.sock (the unit's RuntimeDirectory= makes the directory
# writable under ProtectSystem=strict), answer `setup` and `stats` in irqbalance's format, and
# `settings cpus 4,5` (as intel-lpmd sends it) must move the NIC's queues off CPUs 4-5 in one
# pass, `settings cpus NULL` bring them back; the file goes at stop. The client is
# guest/tools/ibsock.c, one command per connection as irqbalance-ui and intel-lpmd speak.
SCEN=irqbalance-socket
IBSOCK=/usr/local/bin/ibsock
printf '[global]\nirqbalance_socket = true\nreconcile_interval = "1h"\n' > $DROPINS/58-ibsock.toml
jmark
now; T0=$NOW
systemctl restart $UNIT
PID=$(main_pid)
SOCK=/run/irqbalance/irqbalance$PID.sock
ib_ready() { REPLY=$($IBSOCK "$SOCK" setup 2>&1); case $REPLY in "SLEEP 10 BANNED "*) return 0;; esac; return 1; }
check socket "the unit's daemon (pid $PID) listens on $SOCK and answers setup" -- wait_until 10000 ib_ready
ib_stats() {
  REPLY=$($IBSOCK "$SOCK" stats 2>&1)
  local first; set -- $NIC_IRQS; first=$1
  case $REPLY in "TYPE 3 NUMBER -1 LOAD 0 SAVE_MODE 0 "*) ;; *) REPLY="stats: ${REPLY:0:120}"; return 1;; esac
  case $REPLY in *"IRQ $first LOAD 0 DIFF 0 CLASS 4 "*) REPLY="${REPLY:0:160}..."; return 0;; esac
  REPLY="no IRQ $first in stats: ${REPLY:0:160}"; return 1
}
check stats "stats: irqbalance's tree with the NIC's queue IRQs (class 4, ethernet)" -- ib_stats
read_masks "$NIC_IRQS"; BEFORE=$MASKS
nic_off_45() {
  local e
  read_masks "$NIC_IRQS"; REPLY=$MASKS
  for e in $MASKS; do expand "${e#*=}"; contains "$REPLY" 4 && return 1; contains "$REPLY" 5 && return 1; done
  REPLY=$MASKS
}
now; T0=$NOW
$IBSOCK "$SOCK" settings cpus 4,5 > /tmp/ib.out 2>&1
settle "$NIC_IRQS" nic_off_45 10000
measure cpus_ms "$SETTLE_MS"
check cpus "settings cpus 4,5: the queues leave CPUs 4-5 (${SETTLE_MS} ms; reply '$(cat /tmp/ib.out)')" -- nic_off_45
ib_banned() { REPLY=$($IBSOCK "$SOCK" setup 2>&1); [ "$REPLY" = "SLEEP 10 BANNED 00000030" ]; }
check banned "setup then names CPUs 4-5 banned (00000030)" -- ib_banned
now; T0=$NOW
$IBSOCK "$SOCK" settings cpus NULL > /dev/null 2>&1
settle "$NIC_IRQS" '[ "$MASKS" = "$BEFORE" ]' 10000
measure null_ms "$SETTLE_MS"
check null "settings cpus NULL: the queues back (${SETTLE_MS} ms)" -- [ "$SETTLE_MS" -ge 0 ]
check allowed "no call denied in the daemon's life (journal)" -- daemon_quiet
rm -f $DROPINS/58-ibsock.toml
now; T0=$NOW
systemctl restart $UNIT
ib_gone() { [ ! -e "$SOCK" ]; }
check removed "the socket file goes with the daemon it belonged to" -- wait_until 5000 ib_gone

# claim: a runtime claims CPUs 4-5 for a process (`irqwise claim --cpus 4-5 --owner vm-job --pid
# PID`). When the command returns, no movable IRQ may sit on 4-5 (checked in /proc/irq: every IRQ
# with a handler, i.e. a directory of its own below /proc/irq/N; one still there must be one the
# daemon's last plan (status --json) calls kernel-managed or learned the kernel refuses). The
# process is killed: the daemon sees the exit through its pidfd (the reconcile timer is an
# hour here) and the NIC's queues return to their startup CPUs. Times: the command's own
# duration (it waits for the pass), and kill -> masks back (polled every 10 ms).
SCEN=claim
write_config '[global]
reconcile_interval = "1h"'
kill -HUP "$DAEMON_PID"
sleep 1
log_mark
read_masks "$NIC_IRQS"; BEFORE=$MASKS
sleep 600 & JOB=$!
now; T0=$NOW
$IRQWISE claim --cpus 4-5 --owner vm-job --pid "$JOB" > /tmp/claim.out 2>&1; RC=$?
now; CLAIM_MS=$((NOW - T0))
measure claim_ms "$CLAIM_MS"
check claim_rc "irqwise claim exits 0 ($(head -c 160 /tmp/claim.out))" -- [ "$RC" = 0 ]
# off_claimed: every IRQ with a handler whose mask holds CPU 4 or 5 is managed (or refused) in
# the daemon's last plan.
off_claimed() {
  local e i d bad="" handled
  $IRQWISE status --json > /tmp/status.json
  awk -v base=plan. -f /guest/planrows.awk /tmp/status.json > /tmp/status.rows
  all_masks
  for e in $MASKS; do
    i=${e%%=*}; expand "${e#*=}"
    contains "$REPLY" 4 || contains "$REPLY" 5 || continue
    handled=no
    for d in /proc/irq/$i/*/; do [ -d "$d" ] && handled=yes; done
    [ $handled = yes ] || continue
    ROWS=/tmp/status.rows plan_field "$i" 2 || { bad="$bad $i(not planned:${e#*=})"; continue; }
    case $REPLY in managed|skip) ;; *) bad="$bad $i($REPLY:${e#*=})";; esac
  done
  read_masks "$NIC_IRQS"
  for e in $MASKS; do expand "${e#*=}"; contains "$REPLY" 4 || contains "$REPLY" 5 && bad="$bad nic:$e"; done
  REPLY="IRQs on 4-5:${bad:- none movable}"
  [ -z "$bad" ]
}
check claimed "when claim returns (${CLAIM_MS} ms) no movable IRQ is on CPUs 4-5" -- off_claimed
held() { REPLY=$($IRQWISE claims | grep vm-job); echo "$REPLY" | grep -q 'held by irqwise'; }
check listed "irqwise claims lists it held" -- held
measure claimed_masks "$(read_masks "$NIC_IRQS"; mask_lists; echo "$REPLY")"
now; T0=$NOW
kill "$JOB"
settle "$NIC_IRQS" '[ "$MASKS" = "$BEFORE" ]' 10000
measure release_ms "$SETTLE_MS"
check released "pid $JOB killed: the queues are back where they were (${SETTLE_MS} ms, no reconcile timer)" -- [ "$SETTLE_MS" -ge 0 ]
gone() { REPLY=$(ls /run/irqwise/claims); [ -z "$REPLY" ]; }
check file_removed "the claim's file is removed" -- gone
said() { REPLY=$(log_since_mark | grep -m1 'claim vm-job released'); [ -n "$REPLY" ]; }
check logged "the release is logged with its reason" -- said
write_config ''
kill -HUP "$DAEMON_PID"
sleep 1

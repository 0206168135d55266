# claim: `irqwise claim` against the hardened unit (run as root beside it, as a container runtime
# would): the claim file reaches the daemon through /run/irqwise/claims, the daemon's pidfd on
# the claimed process works under SystemCallFilter= (pidfd_open is in @process), and the kill
# brings the queues back without a reconcile pass; no call denied.
SCEN=claim
printf '[global]\nreconcile_interval = "1h"\n' > $DROPINS/57-claim.toml
systemctl reload $UNIT
jmark
read_masks "$NIC_IRQS"; BEFORE=$MASKS
sleep 600 & JOB=$!
now; T0=$NOW
$IRQWISE claim --cpus 4-5 --owner vm-job --pid "$JOB" > /tmp/claim.out 2>&1; RC=$?
now; measure claim_ms $((NOW - T0))
check claim_rc "irqwise claim exits 0 beside the unit ($(head -c 160 /tmp/claim.out))" -- [ "$RC" = 0 ]
nic_off_45() {
  local e
  read_masks "$NIC_IRQS"; REPLY=$MASKS
  for e in $MASKS; do expand "${e#*=}"; contains "$REPLY" 4 && return 1; contains "$REPLY" 5 && return 1; done
  REPLY=$MASKS
}
check claimed "when claim returns the NIC's queues are off CPUs 4-5" -- nic_off_45
now; T0=$NOW
kill "$JOB"
settle "$NIC_IRQS" '[ "$MASKS" = "$BEFORE" ]' 10000
measure release_ms "$SETTLE_MS"
check released "the claimed process killed: queues back (${SETTLE_MS} ms, through the unit's pidfd)" -- [ "$SETTLE_MS" -ge 0 ]
check logged "the release is in the unit's journal" -- unit_log_has 'claim vm-job released'
check allowed "no call denied in the daemon's life (journal)" -- daemon_quiet
rm -f $DROPINS/57-claim.toml
systemctl reload $UNIT

# migrate: the README's migration from irqbalance, run verbatim. A machine irqbalance manages
# with a banned list (irqwise not installed), then the README's migration-steps block as written
# (sudo is the guest's root shell), then every IRQ the kernel lets anyone move is off the banned
# CPUs; the bans survive irqbalance's file being gone; the rollback-steps block brings
# irqbalance back. Afterwards the guest is put back as it was for the later scenarios.
SCEN=migrate
BANNED_MASK=0000004c                 # CPUs 2, 3 and 6: both nodes, NIC's node included
BANNED="2 3 6"
MIG=/tmp/migrate; mkdir -p $MIG
README=$MIG/README.md
cp /usr/share/doc/irqwise/README.md $README
# block MARKER: the shell block after <!-- MARKER --> in the README.
block() { awk -v m="<!-- $1 -->" '$0 == m { on = 1; next } on && /^```sh$/ { inb = 1; next } inb && /^```$/ { exit } inb' $README; }
block migration-steps > $MIG/steps.sh
block rollback-steps > $MIG/rollback.sh
# on_banned: the IRQs on a banned CPU that the kernel would let anyone move (writing their own
# mask back succeeds); REFUSED counts the ones it would not (managed, per-CPU, the timer). IRQs
# no handler requested (empty actions, absent from /proc/interrupts) deliver nothing and are
# left out, as irqbalance leaves them.
on_banned() {
  local f n m c a cpus moved="" REFUSED=0
  for f in /proc/irq/[0-9]*/smp_affinity_list; do
    n=${f#/proc/irq/}; n=${n%%/*}; read -r m < "$f"
    a=$(cat /sys/kernel/irq/$n/actions 2>/dev/null); [ -n "$a" ] || continue
    expand "$m"; cpus=$REPLY
    for c in $BANNED; do
      if contains "$cpus" "$c"; then
        if echo "$m" > "$f" 2>/dev/null; then moved="$moved $n=$m"; else REFUSED=$((REFUSED + 1)); fi
        break
      fi
    done
  done
  REPLY="movable IRQs on CPUs ${BANNED// /,}:${moved:- none}; refused by the kernel: $REFUSED"
  [ -z "$moved" ]
}
ran() { REPLY="exit $1; $(tail -3 "$2" | tr '\n' '|')"; [ "$1" = 0 ]; }

# The machine before: irqbalance with a banned list, irqwise not installed.
systemctl stop irqwise.service
dpkg -r irqwise > $MIG/remove.log 2>&1
cp /etc/default/irqbalance $MIG/irqbalance.orig 2>/dev/null
echo "IRQBALANCE_BANNED_CPUS=$BANNED_MASK" >> /etc/default/irqbalance
systemctl enable irqbalance.service 2>/dev/null
systemctl start irqbalance.service
removed() { REPLY="irqwise $(dpkg-query -W -f='${Status}' irqwise 2>/dev/null), irqbalance $(prop irqbalance.service ActiveState)"; ! [ -x /usr/sbin/irqwise ] && [ "$(prop irqbalance.service ActiveState)" = active ]; }
check before "irqbalance runs with IRQBALANCE_BANNED_CPUS=$BANNED_MASK, irqwise not installed" -- removed
check steps_found "the README's migration and rollback blocks" -- [ -s $MIG/steps.sh -a -s $MIG/rollback.sh ]

cp /root/irqwise.deb $MIG/irqwise_0_amd64.deb
( cd $MIG && sudo() { "$@"; } && set -e && . ./steps.sh ) > $MIG/steps.log 2>&1
check steps_ran "every step of the README's migration succeeds, in order" -- ran $? $MIG/steps.log
switched() {
  REPLY="irqwise $(prop ActiveState), irqbalance $(prop irqbalance.service ActiveState) ($(systemctl is-enabled irqbalance.service 2>/dev/null))"
  [ "$(prop ActiveState)" = active ] && [ "$(prop irqbalance.service ActiveState)" = inactive ] &&
    [ "$(systemctl is-enabled irqbalance.service 2>/dev/null)" = disabled ]
}
check switched "irqwise runs; irqbalance stopped and disabled" -- switched
imported() { REPLY=$(grep -m1 '^banned_cpus' /etc/irqwise/conf.d/90-from-irqbalance.toml); [ "$REPLY" = 'banned_cpus = "2-3,6"' ]; }
check imported "import-irqbalance wrote the banned CPUs into the drop-in" -- imported
check off_banned "every movable IRQ is off the banned CPUs" -- on_banned

# irqbalance's file gone (the package purged): the drop-in alone keeps the bans.
mv /etc/default/irqbalance $MIG/irqbalance.migrated
scramble
systemctl reload irqwise.service
check off_banned_dropin "irqbalance's file gone, NIC queues on every CPU, reload: the drop-in keeps every movable IRQ off them" -- on_banned

( sudo() { "$@"; } && set -e && . $MIG/rollback.sh ) > $MIG/rollback.log 2>&1
check rollback_ran "the README's rollback steps succeed" -- ran $? $MIG/rollback.log
back() { REPLY="irqwise $(prop ActiveState), irqbalance $(prop irqbalance.service ActiveState)"; [ "$(prop ActiveState)" = inactive ] && [ "$(prop irqbalance.service ActiveState)" = active ]; }
check rolled_back "irqbalance runs again, irqwise stopped" -- back

# The guest as it was: irqbalance's own file, no drop-in, irqwise running and enabled.
systemctl stop irqbalance.service
[ -f $MIG/irqbalance.orig ] && cp $MIG/irqbalance.orig /etc/default/irqbalance
rm -f /etc/irqwise/conf.d/90-from-irqbalance.toml
systemctl enable --now irqwise.service 2>/dev/null
now; T0=$NOW; wait_until 20000 placed_as_planned
check restored "irqwise placed the NIC again as before the migration" -- placed_as_planned

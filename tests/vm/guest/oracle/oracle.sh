#!/bin/sh
# The oracle guest's program: the kernel as oracle for irqwise's managed-IRQ prediction. For
# every NVMe controller (one per queue count, serial "q<count>" or "qcpu" for one queue per
# possible CPU) each I/O queue's IRQ mask (/proc/irq/N/smp_affinity_list) and blk-mq's map
# (/sys/block/<ns>/mq/<q-1>/cpu_list) are compared with `irqwise plan --json`: exact (all three
# equal, nothing flagged), uncertain (irqwise says it cannot know, the part it knows agrees) or
# mismatch; then the same machine planned relabelled to a kernel on the other side of 7.0's
# grouping rule (relabel; only where /etc/oracle-relabel exists: run.sh's oracle_relabels). Then the shape's steps (/etc/oracle-steps, one per line) change the
# machine and the checks run again. Output: RESULT/MEASURE lines (lib.sh) and "# " notes.
. /guest/lib.sh
SCEN=oracle
read -r SHAPE < /etc/oracle-shape
measure kernel "$(uname -r)"
cpulists() {
  local d l out=""
  for d in possible present online; do read -r l < /sys/devices/system/cpu/$d; out="$out $d=$l"; done
  for d in /sys/devices/system/node/node[0-9]*; do out="$out ${d##*/}=$(cat "$d/cpulist")"; done
  REPLY=${out# }
}
cpulists; measure cpus "$REPLY"
note "$SHAPE: $REPLY"
$IRQWISE topology 2>&1 | sed 's/^/# topology: /'

# norm LIST: REPLY = the CPUs of a kernel list in either format ("0-3,8" or "4, 5, 6") as
# space-separated numbers.
norm() { expand "$(echo "$1" | tr -d ' ')"; }

# controller_queues CTRL: QIRQS = CTRL's I/O queue IRQs (nvmeKq1, nvmeKq2, ...) in queue order.
controller_queues() {
  local line name q irq i out=""
  i=0; while [ $i -lt 130 ]; do eval "Q_$i="; i=$((i + 1)); done
  while read -r line; do
    name=${line##* }
    case $name in "$1"q[0-9]*) q=${name#"$1"q}; irq=${line%%:*}; eval "Q_$q=$irq";; esac
  done < /proc/interrupts
  i=1; while [ $i -lt 130 ]; do eval "irq=\$Q_$i"; [ -n "$irq" ] && out="$out $irq"; i=$((i + 1)); done
  QIRQS=${out# }
}

# oracle STAGE: one RESULT and one MEASURE per controller.
oracle() {
  local stage=$1 c ctrl serial ns want n q irq have blk d m u exact unc mis first possible_n
  $IRQWISE --config $CFG plan --json > /tmp/plan.json 2>/tmp/plan.err
  awk -v cols=irq,desired,mismatch,uncertain -f /guest/planrows.awk /tmp/plan.json > /tmp/oracle.rows
  expand "$(cat /sys/devices/system/cpu/possible)"; possible_n=$(count "$REPLY")
  for c in /sys/class/nvme/nvme*; do
    ctrl=${c##*/}; read -r serial < "$c/serial"
    ns=$(cd "$c" && ls -d "$ctrl"n1 "$ctrl"c*n1 2>/dev/null | head -1)
    [ -d /sys/block/$ns/mq ] || ns=$(cd /sys/block && ls -d "$ctrl"n1 2>/dev/null | head -1)
    case $serial in qcpu) want=$possible_n;; q*) want=${serial#q}; [ "$want" -gt "$possible_n" ] && want=$possible_n;; *) continue;; esac
    controller_queues "$ctrl"
    n=$(count "$QIRQS"); exact=0; unc=0; mis=0; first=""
    q=1
    for irq in $QIRQS; do
      read -r m < /proc/irq/$irq/smp_affinity_list; norm "$m"; have=$REPLY
      blk="(none)"; [ -r /sys/block/$ns/mq/$((q - 1))/cpu_list ] && { norm "$(cat /sys/block/$ns/mq/$((q - 1))/cpu_list)"; blk=$REPLY; }
      d=-; m=-; u=-
      while read -r i1 d1 m1 u1; do [ "$i1" = "$irq" ] && { d=$d1; m=$m1; u=$u1; break; }; done < /tmp/oracle.rows
      [ "$d" = - ] || { norm "$d"; d=$REPLY; }
      if [ "$have" = "$d" ] && [ "$blk" = "$d" ] && [ "$m" = false ] && [ "$u" = - ]; then
        exact=$((exact + 1))
      elif [ "$u" != - ] && [ "$m" != true ]; then
        unc=$((unc + 1))
      else
        mis=$((mis + 1))
        [ -n "$first" ] || first="queue $q (irq $irq): kernel $have, blk-mq $blk, irqwise $d (mismatch=$m)"
      fi
      q=$((q + 1))
    done
    measure "$serial@$stage" "$n $exact $unc $mis"
    if [ "$n" -ne "$want" ]; then
      result "$serial@$stage" FAIL "$ctrl on node $(cat $c/device/numa_node): $n I/O queue IRQs, expected $want"
    elif [ $mis -eq 0 ]; then
      result "$serial@$stage" PASS "$ctrl: $n queues: $exact exact, $unc uncertain, 0 mismatches"
    else
      result "$serial@$stage" FAIL "$ctrl: $n queues: $exact exact, $unc uncertain, $mis mismatches; first: $first"
    fi
    local masks="" i
    for i in $QIRQS; do read -r m < /proc/irq/$i/smp_affinity_list; masks="$masks $m"; done
    note "$serial@$stage $ctrl node $(cat $c/device/numa_node) kernel masks:$masks"
  done
  [ -s /tmp/plan.err ] && sed 's/^/# plan stderr: /' /tmp/plan.err | head -5
}

# relabel STAGE (issue #63): the machine as `irqwise snapshot` copies it, planned relabelled to a
# kernel on the other side of 7.0's grouping rule (only osrelease changed): every managed NVMe
# I/O queue's kernel mask must be predicted again, the masks showing the rule. One MEASURE
# "relabel-STAGE RELEASE QUEUES MISPREDICTED RULE SOURCE" and one RESULT relabel-STAGE.
relabel() {
  local stage=$1 other n=0 wrong=0 first="" c irq m have d mm u i1 d1 m1 u1 rule source
  case $(uname -r) in [0-6].*) other=7.2.0-relabelled;; *) other=6.1.0-relabelled;; esac
  rm -rf /tmp/rs; $IRQWISE snapshot /tmp/rs > /dev/null 2>&1
  # With what a plan of the live machine reads beside it (as the snapshot step keeps): the boot
  # id and the daemon's topology memory (the CPUs first seen, for a CPU hot-added since).
  mkdir -p /tmp/rs/run/irqwise /tmp/rs/proc/sys/kernel/random
  cp /proc/sys/kernel/random/boot_id /tmp/rs/proc/sys/kernel/random/
  [ -s /run/irqwise/topology.json ] && cp /run/irqwise/topology.json /tmp/rs/run/irqwise/
  echo "$other" > /tmp/rs/proc/sys/kernel/osrelease
  $IRQWISE --config $CFG --root /tmp/rs plan --json > /tmp/plan-rs.json 2>/tmp/plan-rs.err
  awk -v cols=irq,desired,mismatch,uncertain -f /guest/planrows.awk /tmp/plan-rs.json > /tmp/rs.rows
  for c in /sys/class/nvme/nvme*; do
    controller_queues "${c##*/}"
    for irq in $QIRQS; do
      read -r m < /proc/irq/$irq/smp_affinity_list; norm "$m"; have=$REPLY
      d=-; mm=-; u=-
      while read -r i1 d1 m1 u1; do [ "$i1" = "$irq" ] && { d=$d1; mm=$m1; u=$u1; break; }; done < /tmp/rs.rows
      [ "$d" = - ] || { norm "$d"; d=$REPLY; }
      n=$((n + 1))
      if { [ "$have" = "$d" ] && [ "$mm" = false ] && [ "$u" = - ]; } || { [ "$u" != - ] && [ "$mm" != true ]; }; then :; else
        wrong=$((wrong + 1)); [ -n "$first" ] || first="irq $irq: kernel $have, irqwise $d"
      fi
    done
  done
  rule=$(awk -v get=grouping.rule -f /guest/planrows.awk /tmp/plan-rs.json)
  source=$(awk -v get=grouping.source -f /guest/planrows.awk /tmp/plan-rs.json)
  measure "relabel-$stage" "$other $n $wrong ${rule:-?} ${source:-?}"
  if [ $n -gt 0 ] && [ $wrong = 0 ]; then
    result "relabel-$stage" PASS "as $other: $n queues exact (grouping: $rule, $source)"
  else
    result "relabel-$stage" FAIL "as $other: $wrong of $n queues mispredicted${first:+; first: $first}$(head -c 200 /tmp/plan-rs.err)"
  fi
}

# managed_mode: REPLY = "<mode> <error>" of the first I/O queue IRQ of the 7-queue controller:
# the mode of its smp_affinity_list and what a write of CPU 0 answers (kernel/irq/proc.c: 0644
# and EIO up to 6.11, 0444 and EPERM from 6.12, when irq_can_set_affinity_usr() is false).
managed_mode() {
  local c serial irq mode err
  for c in /sys/class/nvme/nvme*; do
    read -r serial < "$c/serial"; [ "$serial" = q7 ] || continue
    controller_queues "${c##*/}"; irq=${QIRQS%% *}
  done
  [ -n "$irq" ] || { REPLY="no q7 controller"; return 1; }
  mode=$(stat -c %a /proc/irq/$irq/smp_affinity_list)
  err=$( (echo 0 > /proc/irq/$irq/smp_affinity_list) 2>&1 )
  case $err in *"I/O error"*|*"Input/output error"*) err=EIO;; *"not permitted"*) err=EPERM;; "") err=written;; *) err="other: $err";; esac
  REPLY="$mode $err"
}

# The steps. A HOST line goes to QEMU's monitor; new CPUs are then polled for in sysfs.
while read -r step args <&3; do
  case $step in
    ""|"#"*) ;;
    check) oracle "$args"; if [ -e /etc/oracle-relabel ]; then relabel "$args"; fi;;
    managed-mode)
      # The mode and write error each kernel gives a kernel-managed IRQ.
      case $(uname -r) in 6.1.*) want="644 EIO";; *) want="444 EPERM";; esac
      managed_mode; got=$REPLY; measure managed_mode "$got"
      check managed_mode "a managed NVMe IRQ's smp_affinity_list: $want" -- [ "$got" = "$want" ]
      [ "$got" = "$want" ] || note "managed mode: got $got, want $want";;
    daemon)
      mkdir -p /run/irqwise
      $IRQWISE --config $CFG --log-format text run </dev/null 2>>$DLOG &
      DAEMON_PID=$!
      i=0; while [ ! -s /run/irqwise/topology.json ] && [ $i -lt 300 ]; do usleep 100000; i=$((i + 1)); done
      check daemon_memory "the daemon wrote its topology memory" -- [ -s /run/irqwise/topology.json ];;
    hotadd)
      read -r before < /sys/devices/system/cpu/present
      if [ "$before" = "$(cat /sys/devices/system/cpu/possible)" ]; then
        # Every possible CPU is present: the kernel has no room for another (6.12 here).
        note "hot-add skipped: possible = present = $before"; measure "hotadd_present" "$before"; continue
      fi
      echo "HOST device_add $args"
      i=0; while [ "$(cat /sys/devices/system/cpu/present)" = "$before" ] && [ $i -lt 300 ]; do usleep 100000; i=$((i + 1)); done
      read -r after < /sys/devices/system/cpu/present
      note "hot-add ($args): present $before -> $after"
      measure "hotadd_present" "$after";;
    online)
      expand "$args"
      for c in $REPLY; do echo 1 > /sys/devices/system/cpu/cpu$c/online || note "cpu$c: online failed"; done;;
    online-new)
      # every present CPU that is offline
      expand "$(cat /sys/devices/system/cpu/present)"
      for c in $REPLY; do
        [ "$(cat /sys/devices/system/cpu/cpu$c/online 2>/dev/null)" = 0 ] && { echo 1 > /sys/devices/system/cpu/cpu$c/online || note "cpu$c: online failed"; }
      done;;
    advise)
      # `irqwise advise boot` on a kernel booted with isolcpus=$args (no managed_irq flag): the
      # kernel spread managed NVMe IRQs over those CPUs too (seen in /proc/irq), so the advice must
      # be isolcpus=managed_irq,$args, and the running command line contradicts it (exit 1).
      out=$($IRQWISE --config $CFG advise boot 2>&1); rc=$?
      echo "$out" | while read -r l; do note "advise: $l"; done
      measure advise_boot_exit "$rc"
      expand "$args"; ISO=$REPLY; on_iso=0
      for d in /sys/class/nvme/nvme*/device/msi_irqs/*; do
        read -r m < /proc/irq/${d##*/}/smp_affinity_list 2>/dev/null || continue
        expand "$m"; for c in $ISO; do contains "$REPLY" "$c" && on_iso=$((on_iso + 1)); done
      done
      measure advise_nvme_irqs_on_isolated "$on_iso"
      advised() {
        REPLY="exit $rc, NVMe IRQ masks holding CPUs $args: $on_iso; $(echo "$out" | grep -m1 'sit on CPUs kept free' | head -c 200)"
        [ $rc = 1 ] && [ $on_iso -gt 0 ] && echo "$out" | grep -q "^  isolcpus=managed_irq,$args " &&
          echo "$out" | grep -q "sit on CPUs kept free ($args)"
      }
      check advise_boot "isolcpus=$args without managed_irq: advise boot says isolcpus=managed_irq,$args, names the managed IRQs there, exits 1" -- advised;;
    smt)
      echo "$args" > /sys/devices/system/cpu/smt/control || note "smt/control $args failed";;
    settle) sleep "$args";;
    snapshot)
      # What `irqwise plan --root` needs to replay this check offline, base64 on the serial line.
      rm -rf /tmp/snap; $IRQWISE snapshot /tmp/snap > /dev/null 2>&1
      mkdir -p /tmp/snap/run/irqwise /tmp/snap/proc/sys/kernel/random
      cp /proc/sys/kernel/random/boot_id /tmp/snap/proc/sys/kernel/random/
      [ -s /run/irqwise/topology.json ] && cp /run/irqwise/topology.json /tmp/snap/run/irqwise/
      echo "@@SNAPSHOT_BEGIN $args"
      (cd /tmp/snap && tar -cf - . | gzip -9 | base64)
      echo "@@SNAPSHOT_END";;
  esac
  cpulists; note "after $step $args: $REPLY"
done 3< /etc/oracle-steps
stop_daemon >/dev/null 2>&1
[ -s $DLOG ] && { echo "@@DAEMON_LOG_BEGIN"; cat $DLOG; echo "@@DAEMON_LOG_END"; }
echo "@@DONE"
echo "HOST quit"   # nothing left to check: the host stops QEMU (no shutdown of five controllers)

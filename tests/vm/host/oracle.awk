# oracle.awk: the oracle tier's results and its matrix (kernel x shape x queue count).
# usage: awk -v md=SECTION.md -v boots=BOOTS [-v tier=arm64] [-v queues="1 3 5 7 cpu"] -f oracle.awk EXPECTED GUEST_OUT
# (tier=arm64: the arm64 tier's heading and introduction, host/arm64.sh, its relabelled column
# and its kernel facts;
# queues: the controllers' queue counts, one column each, cpu = one per possible CPU)
# EXPECTED: "KERNEL/SHAPE CHECK" pairs the host expects (one per controller and check stage, and
# daemon_memory where a shape starts the daemon); one the guest never reported counts as failed.
# GUEST_OUT: every boot's guest output with RESULT/MEASURE lines tagged KERNEL/SHAPE; a MEASURE
# "q<count>@<stage>" value is "QUEUES EXACT UNCERTAIN MISMATCH". BOOTS: one line per boot,
# tab-separated: version, release, shape, guest run seconds, shape description.
# Prints one line per check, writes the tier's RESULTS.md section to md; exit 1 on any failure.
FNR == NR { if (!(($1 " " $2) in expected)) { expected[$1 " " $2] = 1; order[++n_exp] = $1 " " $2 }; next }
/^RESULT / {
  k = $2 " " $3; status[k] = $4
  d = $0; sub(/^RESULT [^ ]+ [^ ]+ [^ ]+ ?/, "", d); detail[k] = d
  if (!(k in expected)) { expected[k] = 1; order[++n_exp] = k }
  next
}
/^MEASURE / {
  v = $0; sub(/^MEASURE [^ ]+ [^ ]+ /, "", v); m[$2 " " $3] = v
  if ($3 ~ /^fact:/) {
    fv = $2; sub(/\/.*/, "", fv)
    if (!((fv " " $3) in fact)) fact[fv " " $3] = v
    if (!(substr($3, 6) in fseen)) { fseen[substr($3, 6)] = 1; fnames[++n_fnames] = substr($3, 6) }
  }
  next
}
function out(s) { print s; print s > md }
# The relabel MEASURE "RELEASE QUEUES MISPREDICTED RULE SOURCE": the snapshot planned as kernel
# RELEASE (only osrelease changed), how many of its queues that plan mispredicts, and the grouping
# rule it used with where that came from (observed: the masks showed it).
function relabelcell(k,   f) {
  if (!(k in m)) return "not run"
  split(m[k], f, " ")
  if (f[3] > 0) return "as " f[1] ": **" f[3] " of " f[2] " wrong**"
  return "as " f[1] ": " f[2] " exact (" f[4] ", " f[5] ")"
}
# The kernel facts of each kernel (MEASURE "fact:NAME VALUE SOURCE", from the first shape booted
# on it): one table, a column per kernel.
function facts_table(   v, i, k, row, head, rule, w) {
  if (n_fnames == 0) return
  head = "| kernel fact |"; rule = "|---|"
  for (v = 1; v <= n_versions; v++) { head = head " " release[versions[v]] " |"; rule = rule "---|" }
  out("Kernel facts, as `irqwise topology --root` lists them from each guest's BTF and modules (value, source):")
  out("")
  out(head); out(rule)
  for (i = 1; i <= n_fnames; i++) {
    row = "| " fnames[i] " |"
    for (v = 1; v <= n_versions; v++) {
      k = versions[v] " fact:" fnames[i]
      row = row " " ((k in fact) ? fact[k] : "-") " |"
    }
    out(row)
  }
  out("")
}
function cell(k,   f, n) {
  if (!(k in m)) return "not run"
  n = split(m[k], f, " ")
  if (f[4] > 0) return "**" f[4] " of " f[1] " mismatch**"
  if (f[3] > 0) return f[1] ": " f[2] " exact, " f[3] " uncertain"
  return f[1] " exact"
}
END {
  for (i = 1; i <= n_exp; i++) {
    k = order[i]
    if (!(k in status)) { status[k] = "FAIL"; detail[k] = "not reported by the guest" }
    split(k, p, " ")
    printf "%-4s %s %s  %s\n", status[k], p[1], p[2], detail[k]
    if (status[k] == "PASS") pass++
    else { fail++; fails = fails "- FAIL " p[1] " " p[2] ": " detail[k] "\n" }
  }
  for (k in m) {
    if (split(k, p, " ") != 2 || p[2] !~ /^q[0-9a-z]+@/) continue
    split(m[k], f, " ")
    preds += f[1]; exact += f[2]; unc += f[3]; mis += f[4]
    split(p[2], qs, "@"); stage_seen[p[1] " " qs[2]] = 1
  }
  if (tier == "arm64") {
    print "## arm64: clusters from the device tree, managed NVMe queues predicted from a snapshot" > md
    print "" > md
    out("Debian's arm64 kernels under qemu-system-aarch64 (TCG, `-M virt,gic-version=3 -cpu max,pauth-impdef=on`, the")
    out("topology from the device tree QEMU generates), busybox init, six NVMe controllers (1, 3, 4, 5 and")
    out("7 I/O queue pairs, and one per possible CPU) and a 4-queue virtio-net NIC. The guest copies what a")
    out("plan reads to a disk; the host's `irqwise plan --root` and `irqwise topology --root` of that copy")
    out("are compared with the guest's kernel: every I/O queue's mask and blk-mq map (exact, uncertain,")
    out("mismatch, as the oracle tier), the topology (every CPU's cluster, core, package and node, every")
    out("distance) and the NIC (queues in cores-first order, each CPU's transmit queue the nearest).")
    out("Relabelled: the same snapshot planned as a kernel on the other side of 7.0 (`group_cpus_evenly()`")
    out("groups by cluster from 7.0 on, 89802ca36c96; only `osrelease` changed): every queue must be")
    out("exact again, the managed masks showing the rule (issue #63); the cell names the rule the plan")
    out("used and where it came from.")
  } else {
    print "## The kernel as oracle: managed NVMe queues predicted by irqwise, checked on real kernels" > md
    print "" > md
    out("Each guest boots with five NVMe controllers on one node (1, 3, 5 and 7 I/O queue pairs, and")
    out("64: one queue per possible CPU) and compares, for every I/O queue, `irqwise plan --json` with")
    out("the kernel's `/proc/irq/N/smp_affinity_list` and blk-mq's `/sys/block/<ns>/mq/<q>/cpu_list`:")
    out("exact (all three agree), uncertain (irqwise says it cannot know, the part it knows agrees),")
    out("mismatch (anything else). QEMU TCG, busybox init; one boot per kernel and shape. Relabelled:")
    out("the guest's `irqwise snapshot` planned as a kernel on the other side of 7.0's grouping rule")
    out("(only `osrelease` changed, issue #63): every queue must be predicted again; the cell names the")
    out("rule the plan used and where it came from (observed: the managed masks showed it).")
  }
  out("")
  out("| Shape | QEMU guest |")
  out("|---|---|")
  while ((getline line < boots) > 0) {
    split(line, b, "\t")
    if (!(b[3] in shape_desc)) { shape_desc[b[3]] = b[5]; shapes[++n_shapes] = b[3]; out("| " b[3] " | " b[5] " |") }
    release[b[1]] = b[2]; if (!(b[1] in seen_v)) { seen_v[b[1]] = 1; versions[++n_versions] = b[1] }
    boot[b[1] "/" b[3]] = b[4]
  }
  out("")
  if (queues == "") queues = "1 3 5 7 cpu"
  n_q = split(queues, qlist, " ")
  head = "| Kernel | Shape | When |"; rule = "|---|---|---|"
  for (i = 1; i <= n_q; i++) { head = head " " (qlist[i] == "cpu" ? "one per CPU" : qlist[i] (qlist[i] == 1 ? " queue" : " queues")) " |"; rule = rule "---|" }
  head = head " relabelled |"; rule = rule "---|"
  out(head " guest run |"); out(rule "---|")
  for (v = 1; v <= n_versions; v++) for (s = 1; s <= n_shapes; s++) {
    tag = versions[v] "/" shapes[s]
    n_st = 0
    for (i = 1; i <= n_exp; i++) {
      split(order[i], p, " ")
      if (p[1] != tag || p[2] !~ /^q1@/) continue
      st = substr(p[2], 4); stages[++n_st] = st
    }
    for (j = 1; j <= n_st; j++) {
      st = stages[j]
      row = "| " release[versions[v]] " | " shapes[s] " | " st " |"
      for (i = 1; i <= n_q; i++) row = row " " cell(tag " q" qlist[i] "@" st) " |"
      row = row " " relabelcell(tier == "arm64" ? tag " relabel" : tag " relabel-" st) " |"
      bt = boot[tag]; note = ""; if ((i = index(bt, " ")) > 0) { note = substr(bt, i); bt = substr(bt, 1, i - 1) }
      out(row " " bt " s" note " |")
    }
  }
  out("")
  out(sprintf("%d queue predictions: %d exact, %d uncertain, %d mismatches.", preds, exact, unc, mis))
  out("")
  facts_table()
  line = sprintf("%d passed, %d failed", pass, fail)
  print line
  print line > md
  if (fail) printf "\n%s", fails > md
  exit fail > 0 ? 1 : 0
}

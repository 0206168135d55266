# arm64.awk: the arm64 tier's topology and NIC checks of one snapshot, from tagged lines
# (arm64_check in arm64.sh writes them; the guest's own files on one side, irqwise on the other):
#   T PATH VALUE        `irqwise topology --json` flattened (planrows.awk -v dump=1)
#   P PATH VALUE        `irqwise plan --json` flattened
#   F CPU KIND LIST     the guest's topology/<KIND>_cpus_list of CPU (cluster, core, package, thread)
#   N NODE LIST DIST..  node NODE's cpulist and distance row (the guest's files)
#   O LIST              the online CPU list;  D NODE  the NIC's numa_node (-1: none)
# Prints "RESULT arm64 topology ..." and "RESULT arm64 nic ...": PASS or FAIL with the first
# difference. Independent of irqwise's code: the expected NIC order is computed here from the
# files (NUMA hops from the NIC's node by distance, each hop's CPUs one thread per core first).
function expand(list, out,   n, p, i, r, a, b, c, k) {
  delete out; k = 0
  if (list == "" || list == "-") return 0
  n = split(list, p, ",")
  for (i = 1; i <= n; i++) {
    if (split(p[i], r, "-") == 2) { a = r[1] + 0; b = r[2] + 0 } else { a = p[i] + 0; b = a }
    for (c = a; c <= b; c++) out[c] = 1
  }
  for (c in out) k++
  return k
}
function canon(list,   s, c, m, keys, n, i, j, t) {
  expand(list, s); n = 0
  for (c in s) keys[++n] = c + 0
  for (i = 2; i <= n; i++) { t = keys[i]; for (j = i - 1; j >= 1 && keys[j] > t; j--) keys[j + 1] = keys[j]; keys[j + 1] = t }
  m = ""; for (i = 1; i <= n; i++) m = m (i > 1 ? "," : "") keys[i]
  return m
}
$1 == "T" { t[$2] = $3; next }
$1 == "P" { p[$2] = $3; next }
$1 == "F" { f[$2, $3] = $4; cpus[$2] = 1; next }
$1 == "N" { nodelist[$2] = $3; nodes[$2] = 1; for (i = 4; i <= NF; i++) dist[$2, i - 4] = $i; next }
$1 == "O" { online = $2; next }
$1 == "D" { nicnode = $2; next }
END {
  # Topology: for every CPU, the CPUs irqwise gives the same cluster/core/package id must be the
  # CPUs of the guest's list; its node is the node whose cpulist holds it; distances equal.
  bad = ""; checked = 0
  for (i = 0; ("cpus." i ".cpu") in t; i++) {
    c = t["cpus." i ".cpu"]; idx[c] = i
  }
  split("cluster core package", kinds, " ")
  for (c in cpus) {
    if (!(c in idx)) { bad = bad "; cpu " c " missing from irqwise topology"; continue }
    for (k = 1; k <= 3; k++) {
      kind = kinds[k]; want = canon(f[c, kind]); have = ""
      for (d in idx) if (t["cpus." idx[d] "." kind] == t["cpus." idx[c] "." kind]) have = have (have == "" ? "" : ",") d
      have = canon(have); checked++
      if (have != want) bad = bad "; cpu " c " " kind ": irqwise " have ", kernel " want
    }
    wn = "-"; for (n in nodes) { expand(nodelist[n], nset); if (c in nset) wn = n }
    hn = t["cpus." idx[c] ".node"]; if (hn == "null" || hn == "") hn = "-"; checked++
    if (hn != wn) bad = bad "; cpu " c " node: irqwise " hn ", kernel " wn
  }
  for (i = 0; ("nodes." i ".node") in t; i++) {
    n = t["nodes." i ".node"]
    for (j = 0; (n, j) in dist; j++) {
      checked++
      if (t["nodes." i ".distance." j] != dist[n, j]) bad = bad "; distance " n "-" j ": irqwise " t["nodes." i ".distance." j] ", kernel " dist[n, j]
    }
  }
  ncl = 0; for (c in cpus) { cl = canon(f[c, "cluster"]); if (!(cl in seencl)) { seencl[cl] = 1; ncl++ } }
  if (bad == "" && checked > 0) print "RESULT arm64 topology PASS " checked " facts equal (" length(cpus) " CPUs, " ncl " clusters, " length(nodes) " nodes)"
  else print "RESULT arm64 topology FAIL " (checked == 0 ? "nothing compared" : substr(bad, 3, 400))

  # NIC: the expected cores-first order from the NIC's node. Hops: the nodes with online CPUs
  # grouped by their distance from the NIC's node, nearest first (no node: all online CPUs).
  expand(online, on); norder = 0; nhops = 0
  if (nicnode == "" || nicnode < 0 || !(nicnode in nodes)) { hopcpus[++nhops] = online }
  else {
    for (n in nodes) { dv = dist[nicnode, n]; if (!(dv in hopi)) { hopi[dv] = 1; dvs[++nd] = dv + 0 } }
    for (a = 2; a <= nd; a++) { x = dvs[a]; for (b = a - 1; b >= 1 && dvs[b] > x; b--) dvs[b + 1] = dvs[b]; dvs[b + 1] = x }
    for (a = 1; a <= nd; a++) { l = ""; for (n in nodes) if (dist[nicnode, n] == dvs[a]) l = l (l == "" ? "" : ",") nodelist[n]; hopcpus[++nhops] = l }
  }
  for (h = 1; h <= nhops; h++) {
    # One thread of every core first: rank = online siblings below the CPU.
    split(canon(hopcpus[h]), hc, ","); maxr = 0
    for (i in hc) { c = hc[i]; if (!(c in on)) continue; expand(f[c, "thread"], sib); r = 0; for (sb in sib) if (sb + 0 < c + 0 && (sb in on)) r++; rank[c] = r; if (r > maxr) maxr = r }
    for (r = 0; r <= maxr; r++) for (i = 1; i in hc; i++) { c = hc[i]; if ((c in on) && rank[c] == r) order[norder++] = c }
  }
  nbad = ""; nq = 0
  for (d = 0; ("devices." d ".bdf") in p; d++) {
    if (p["devices." d ".class"] != "nic") continue
    for (i = 0; ("devices." d ".irqs." i ".irq") in p; i++) {
      q = "devices." d ".irqs." i; role = p[q ".role"]
      if (role != "rx" && role != "tx") continue
      qi = p[q ".queue"]; have = p[q ".desired"]; nq++
      if (have ~ /[,-]/ || have != order[qi % norder]) nbad = nbad "; " role " " qi ": irqwise " have ", expected " order[qi % norder]
      irqcpu[qi] = have
    }
    # XPS: every online CPU transmits on exactly one queue, and no other queue's IRQ CPU is
    # nearer to it (same CPU, core, cluster, node, then distance): cluster-aware as documented.
    for (c in on) {
      owner = ""; owners = 0
      for (j = 0; ("devices." d ".xps.queues." j ".txq") in p; j++) {
        expand(p["devices." d ".xps.queues." j ".desired"], xs)
        if (c in xs) { split(canon(p["devices." d ".xps.queues." j ".irq_cpus"]), ic, ","); owner = ic[1]; owners++ }
      }
      if (owners != 1) { nbad = nbad "; cpu " c " transmits on " owners " queues"; continue }
      best = 99999; for (j in irqcpu) { v = near(c, irqcpu[j]); if (v < best) best = v }
      if (near(c, owner) != best) nbad = nbad "; cpu " c " transmits on the queue of cpu " owner " (class " near(c, owner) "), a nearer one has class " best
    }
  }
  if (nq == 0) print "RESULT arm64 nic FAIL no NIC queue IRQ in the plan"
  else if (nbad == "") print "RESULT arm64 nic PASS " nq " queue IRQs in cores-first order from node " nicnode ", XPS nearest by cluster"
  else print "RESULT arm64 nic FAIL " substr(nbad, 3, 400)
}
# near(A, B): 0 same CPU, 1 same core, 2 same cluster, 3 same node, 100 + distance otherwise.
function near(a, b,   s, n, na, nb) {
  if (a == b) return 0
  expand(f[a, "thread"], s); if (b in s) return 1
  expand(f[a, "cluster"], s); if (b in s) return 2
  for (n in nodes) { expand(nodelist[n], s); if (a in s) na = n; if (b in s) nb = n }
  if (na == nb) return 3
  return 100 + dist[na, nb]
}

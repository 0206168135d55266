# planrows.awk: reads `irqwise plan --json` and prints one line per IRQ:
#   IRQ ACTION MANAGED DESIRED CURRENT BDF DRIVER DEVNODE NAME
# DESIRED/CURRENT are comma-separated CPU numbers (from the kernel list strings documents
# write; "-" when null or empty); NAME is last as it may hold
# spaces. A tiny JSON reader (objects, arrays, strings, literals) flattens the document into
# path -> value pairs first; it knows nothing of irqwise beyond the field names it prints.
# -v base=plan. reads the plan inside a larger document (`irqwise status --json` keeps it under
# "plan"); -v get=KEY prints only the value at KEY ("passes", "pid"), or nothing when absent;
# -v cols=irq,desired,mismatch,uncertain prints those fields of each IRQ instead ("-" when
# absent; desired/current as comma-separated CPUs), so a field with spaces goes last.
# -v dump=1 prints every scalar as "PATH VALUE" (PATH dotted, array indexes as numbers), for
# readers of other documents (`irqwise topology --json`, the plan's xps; tests/vm/host/arm64.sh).
function ws() { while (pos <= n && index(" \t\r\n", substr(buf, pos, 1)) > 0) pos++ }
function str(   s, c) {
  pos++; s = ""
  while (pos <= n) {
    c = substr(buf, pos, 1)
    if (c == "\\") { s = s substr(buf, pos + 1, 1); pos += 2; continue }
    pos++
    if (c == "\"") return s
    s = s c
  }
  return s
}
function value(path,   c, k, i, s) {
  ws(); c = substr(buf, pos, 1)
  if (c == "{" || c == "[") {
    pos++; ws(); i = 0
    if (substr(buf, pos, 1) == (c == "{" ? "}" : "]")) { pos++; val[path] = (c == "{" ? "{}" : "[]"); return }
    while (pos <= n) {
      ws()
      if (c == "{") { k = str(); ws(); pos++ } else k = i++
      value(path == "" ? k : path "." k)
      ws(); s = substr(buf, pos, 1); pos++
      if (s != ",") return
    }
    return
  }
  if (c == "\"") { val[path] = str(); return }
  s = ""
  while (pos <= n && index(",]} \t\r\n", substr(buf, pos, 1)) == 0) { s = s substr(buf, pos, 1); pos++ }
  val[path] = s
}
function list(prefix,   j, s) {
  # Documents write CPU sets as kernel list strings ("0-3,8"; schema 1 wrote arrays): both come
  # out as comma-separated CPUs ("0,1,2,3,8"), "-" for none.
  if ((prefix in val) && val[prefix] != "null" && val[prefix] != "[]") return val[prefix] == "" ? "-" : cpus(val[prefix])
  if (!((prefix ".0") in val)) return "-"
  s = val[prefix ".0"]
  for (j = 1; (prefix "." j) in val; j++) s = s "," val[prefix "." j]
  return s
}
function cpus(l,   n, p, i, r, a, s) {
  s = ""; n = split(l, p, ",")
  for (i = 1; i <= n; i++) {
    if (split(p[i], r, "-") == 2) { for (a = r[1] + 0; a <= r[2] + 0; a++) s = s (s == "" ? "" : ",") a }
    else s = s (s == "" ? "" : ",") p[i]
  }
  return s
}
function field(k) { return (k in val && val[k] != "null" && val[k] != "") ? val[k] : "-" }
{ buf = buf $0 "\n" }
END {
  n = length(buf); pos = 1; value("")
  if (get != "") { if (get in val) print val[get]; exit }
  if (dump) { for (k in val) print k, val[k]; exit }
  for (d = 0; (base "devices." d ".bdf") in val; d++) {
    p = base "devices." d
    for (i = 0; (p ".irqs." i ".irq") in val; i++) {
      q = p ".irqs." i
      if (cols != "") {
        nc = split(cols, cl, ","); line = ""
        for (j = 1; j <= nc; j++)
          line = line (j > 1 ? " " : "") ((cl[j] == "desired" || cl[j] == "current") ? list(q "." cl[j]) : field(q "." cl[j]))
        print line
        continue
      }
      print val[q ".irq"], field(q ".action"), field(q ".managed"), list(q ".desired"), list(q ".current"),
        val[p ".bdf"], field(p ".driver"), field(p ".node"), field(q ".name")
    }
  }
}

# facts.awk: the kernel facts `irqwise topology --json` lists (issue #63), one line per fact, from
# the document flattened by planrows.awk -v dump=1 ("PATH VALUE" lines):
#   btf STATE DETAIL          where BTF came from: read (DETAIL: its type count), absent, unreadable
#   modules DIR               the module tree read (or "modules - WHY" when none could be)
#   NAME VALUE SOURCE         each feature: true, false or unknown, and btf, module, observed,
#                             version or unknown
#   DRIVER/IMPORT VALUE SOURCE  each NIC driver's import (affinity-auto, affinity-hint, ...)
# Knows nothing of irqwise beyond the field names of `kernel_facts`; used in the kernel tiers'
# guests (guest/scenarios/08-facts.sh) and on the arm64 tier's host (host/arm64.sh).
{ k = $1; v = substr($0, length($1) + 2); f[k] = v }
function val(x) { return (x == "" || x == "null") ? "unknown" : x }
END {
  p = "kernel_facts."
  s = f[p "btf.state"]; d = (s == "read") ? f[p "btf.types"] " types" : f[p "btf.path"]
  print "btf", (s == "" ? "unknown" : s), d
  if (f[p "modules.dir"] != "" && f[p "modules.dir"] != "null") print "modules", f[p "modules.dir"]
  else print "modules", "-", f[p "modules.why"]
  for (i = 0; (p "features." i ".name") in f; i++)
    print f[p "features." i ".name"], val(f[p "features." i ".value"]), f[p "features." i ".source"]
  for (i = 0; (p "drivers." i ".driver") in f; i++)
    for (j = 0; (p "drivers." i ".imports." j ".name") in f; j++) {
      q = p "drivers." i ".imports." j
      print f[p "drivers." i ".driver"] "/" f[q ".name"], val(f[q ".value"]), f[q ".source"]
    }
}

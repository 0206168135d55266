# facts: what the running kernel states of itself (issue #63), as `irqwise topology --json` lists
# it: where BTF and the module tree came from, each feature and each NIC driver's imports with
# value and source (guest/facts.awk), one MEASURE line each ("fact:NAME VALUE SOURCE"; RESULTS.md
# lists them per kernel). Debian's kernels have BTF (/sys/kernel/btf/vmlinux) and the initramfs
# holds the NIC drivers' modules below lib/modules/RELEASE, so every feature is decided by BTF or,
# where BTF cannot show it, by the version, and every import by the module; an "unknown" fails.
SCEN=facts
$IRQWISE topology --json > /tmp/topology.json 2>/tmp/topology.err
awk -v dump=1 -f /guest/planrows.awk /tmp/topology.json | awk -f /guest/facts.awk > /tmp/facts
while read -r name rest; do measure "fact:$name" "$rest"; done < /tmp/facts
[ -s /tmp/topology.err ] && sed 's/^/# facts: topology stderr: /' /tmp/topology.err | head -5

# facts_known: BTF read, a module tree, no fact unknown; REPLY counts the facts by source.
facts_known() {
  local name value source btf=0 mods=0 n=0 unknown="" by_btf=0 by_module=0 by_version=0 by_observed=0
  while read -r name value source; do
    case $name in
      btf) [ "$value" = read ] && btf=1;;
      modules) [ "$value" != - ] && mods=1;;
      *) n=$((n + 1))
        case $source in
          btf) by_btf=$((by_btf + 1));; module) by_module=$((by_module + 1));;
          version) by_version=$((by_version + 1));; observed) by_observed=$((by_observed + 1));;
          *) unknown="$unknown $name";;
        esac
        [ "$value" = unknown ] && case " $unknown " in *" $name "*) ;; *) unknown="$unknown $name";; esac;;
    esac
  done < /tmp/facts
  REPLY="$n facts: $by_btf from BTF, $by_module from modules, $by_observed observed, $by_version from the version"
  [ $btf = 1 ] || { REPLY="BTF not read: $(grep '^btf ' /tmp/facts)"; return 1; }
  [ $mods = 1 ] || { REPLY="no module tree: $(grep '^modules ' /tmp/facts)"; return 1; }
  [ $n -gt 0 ] || { REPLY="no facts in topology --json"; return 1; }
  [ -z "$unknown" ] || { REPLY="$REPLY; unknown:$unknown"; return 1; }
}
check kernel_facts "topology --json: BTF and modules read, every fact known with its source" -- facts_known

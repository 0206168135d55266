# journal: message catalog entries, and the unit's exposure as systemd-analyze computes it for the
# loaded unit inside the guest, against the figure the README (as installed by the package) states.
SCEN=journal
# SKIP only for a package without MESSAGE_IDs and catalog; otherwise a real assertion.
CATALOG=$(ls /usr/lib/systemd/catalog/irqwise*.catalog 2>/dev/null | head -1)
# Only irqwise's own entries: -u also lists systemd's, which have IDs, and so does a process
# systemd fails to start in the unit's cgroup.
OWN="_SYSTEMD_UNIT=$UNIT SYSLOG_IDENTIFIER=irqwise"
if [ -z "$CATALOG" ] && ! journalctl $OWN -o export | grep -aq '^MESSAGE_ID='; then
  result message_catalog SKIP "placeholder: no MESSAGE_ID in irqwise's entries and no catalog installed yet"
else
  catalog() {
    local id
    id=$(journalctl $OWN -o export | grep -a '^MESSAGE_ID=' | head -1 | cut -d= -f2)
    REPLY="catalog ${CATALOG:-none}, first MESSAGE_ID ${id:-none}"
    [ -n "$CATALOG" ] && [ -n "$id" ] || return 1
    # The explanation's lines start with "-- " before systemd 248 and "░░ " since: look for the
    # catalog's own header instead.
    journalctl -u $UNIT -x MESSAGE_ID="$id" -n 1 --no-pager | grep -q 'Defined-By: irqwise'
  }
  check message_catalog "MESSAGE_ID entries are explained by journalctl -x" -- catalog
fi

exposure() {
  local online readme
  online=$(systemd-analyze security --no-pager $UNIT 2>&1 | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
  readme=$(sed -n 's/.*Overall exposure level for irqwise.service: \([0-9.]*\).*/\1/p' /usr/share/doc/irqwise/README.md | head -1)
  REPLY="systemd-analyze security irqwise: ${online:-?}; README: ${readme:-?}"
  [ -n "$online" ] && [ "$online" = "$readme" ]
}
check exposure "the exposure the README states" -- exposure

"""Names, rules and settings every layer uses: the record fields, times, paging, configuration,
write results."""

"""Set-up shared by the cluster tests (filled in next)."""

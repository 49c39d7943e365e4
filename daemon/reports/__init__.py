"""What people read about their vault: ``aclarai status`` (:mod:`.status`) and its
``--wait-idle`` (:mod:`.idle`), ``aclarai claims`` (:mod:`.claims`) and the dashboard note
written into the vault (:mod:`.dashboard`)."""

from aclarai.daemon.reports.claims import list_claims
from aclarai.daemon.reports.dashboard import DashboardRefresher, refresh_dashboard
from aclarai.daemon.reports.idle import wait_idle
from aclarai.daemon.reports.status import Status, collect_status, format_status, status_json

__all__ = [
    "DashboardRefresher",
    "Status",
    "collect_status",
    "format_status",
    "list_claims",
    "refresh_dashboard",
    "status_json",
    "wait_idle",
]

"""The fleet's event log: its vocabulary (which events there are) and its one writer, shared by
every room that writes events (the queue, the collectors, the gates, the statistics, the
scheduler, the website), so none of them depends on another for it."""

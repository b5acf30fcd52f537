// OOM kills as the Docker daemon's event log reports them (docs/traps.md, "OOMKilled under load").
//
// State.OOMKilled alone misses some: docker 20.10 copies it into a container's exit status only
// when containerd's TaskOOM was handled BEFORE its TaskExit (libcontainerd/remote/client.go), and
// the runc shim sends the two from different goroutines; on a loaded machine the TaskOOM comes
// second, State.OOMKilled stays false, and the daemon still logs its `oom` event. containerd's
// CRI (what a kubelet reads) sets the reason OOMKilled on a TaskOOM in either order. The driver
// asks the event log (GET /events with since/until, a finite answer) when a container it did not
// stop ended 137 without State.OOMKilled.
#pragma once

#include <string>
#include <string_view>

namespace sandprobe::drivers {

// The query (after the API version prefix) for `oom` events of container id between two Unix
// times: /events?since=..&until=..&filters={"type":["container"],"event":["oom"],"container":[id]}.
std::string OomEventsQuery(std::string_view id, double since_unix, double until_unix);

// True when a GET /events answer (one JSON object per line) holds an `oom` event of container id
// (the full id, or a prefix of it the daemon printed). Unreadable lines are skipped.
bool HasOomEvent(std::string_view events_body, std::string_view id);

}  // namespace sandprobe::drivers

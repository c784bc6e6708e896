// The page `flowtrain events LOGDIR --html OUT` writes: one self-contained HTML file (no
// scripts, nothing fetched; images as data: URIs) drawing what TensorBoard's dashboards draw
// for the runs: each scalar tag's runs on one chart with a legend, histograms re-binned onto
// 30 uniform bins (summary/histogram_bins.h), each image tag's images with buttons to pick the
// step (plain HTML and CSS; the latest shown first), round axis ticks, and each run's
// unreadable records.
//
//   const EventRuns runs = summary::LoadRuns("runs/digits");
//   WriteFileAtomically("report.html", EventsHtmlPage("runs/digits", runs));
#ifndef FLOWTRAIN_TOOLS_EVENTS_PAGE_H_
#define FLOWTRAIN_TOOLS_EVENTS_PAGE_H_

#include <string>
#include <utility>
#include <vector>

#include "flowtrain/summary/event_accumulator.h"

namespace flowtrain::tools {

// Runs by name, as summary::LoadRuns returns them (sorted by name).
using EventRuns = std::vector<std::pair<std::string, summary::EventAccumulator>>;

// The page for `runs`, titled with `logdir`. Pure; does not read or write files.
std::string EventsHtmlPage(const std::string& logdir, const EventRuns& runs);

}  // namespace flowtrain::tools

#endif  // FLOWTRAIN_TOOLS_EVENTS_PAGE_H_

// `flowtrain events LOGDIR [--tag TAG] [--html OUT]`: what TensorBoard would show for the runs
// under LOGDIR, for users without TensorBoard (like `tensorboard --inspect`, plus values).
//
//   $ flowtrain events runs/digits                 # runs, tags, step ranges, latest values
//   $ flowtrain events runs/digits --tag loss      # the series as a table and a sparkline
//   $ flowtrain events runs/digits --html out.html # one self-contained page of SVG charts
//
// LOGDIR may also be a single event file. Restarts are handled as TensorBoard does (values
// past a SessionLog START are dropped), see summary/event_accumulator.h. The page follows
// TensorBoard's dashboards: a scalar tag's runs share a chart, histograms are re-binned onto
// 30 uniform bins (summary/histogram_bins.h), images are embedded as data: URIs.
//
// A corrupt record is printed with its file and offset, everything readable is still shown,
// and the command then exits 1; a file ending in an unfinished record (its writer still
// running or killed) is only noted.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/summary/event_accumulator.h"
#include "flowtrain/summary/histogram_bins.h"
#include "tools/commands.h"
#include "tools/events_format.h"
#include "tools/events_page.h"

namespace flowtrain::tools {
namespace {

template <typename Series>
std::string StepRange(const Series& series) {
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
  for (const auto& e : series) {
    lo = std::min(lo, e.step);
    hi = std::max(hi, e.step);
  }
  return series.empty() ? "-" : lo == hi ? StrCat(lo) : StrCat(lo, "..", hi);
}

// One Unicode block character per column; long series are averaged into `width` columns.
std::string Sparkline(const std::vector<double>& values, size_t width = 60) {
  static const char* const kBlocks[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  if (values.empty()) return "";
  std::vector<double> columns;
  const size_t n = std::min(width, values.size());
  for (size_t c = 0; c < n; ++c) {
    const size_t begin = c * values.size() / n, end = (c + 1) * values.size() / n;
    double sum = 0;
    for (size_t i = begin; i < end; ++i) sum += values[i];
    columns.push_back(sum / static_cast<double>(end - begin));
  }
  const auto [lo, hi] = std::minmax_element(columns.begin(), columns.end());
  std::string out;
  for (double v : columns) {
    const int level = *hi > *lo ? static_cast<int>(std::lround((v - *lo) / (*hi - *lo) * 7)) : 3;
    out += kBlocks[std::clamp(level, 0, 7)];
  }
  return out;
}

// The run's unreadable records and unfinished last records, one line each.
void PrintReadProblems(std::FILE* out, const std::string& name, const summary::EventAccumulator& run) {
  for (const auto& bad : run.corrupt_records()) {
    std::fprintf(out, "  run %s: %s; the events before it are shown, the rest of that file is not\n",
                 name.c_str(), bad.message.c_str());
  }
  for (const auto& partial : run.partial_records()) {
    std::fprintf(out,
                 "  run %s: %s ends in an unfinished record (%llu bytes at offset %llu): its "
                 "writer is still running or was stopped while writing\n",
                 name.c_str(), partial.file.c_str(), static_cast<unsigned long long>(partial.bytes),
                 static_cast<unsigned long long>(partial.offset));
  }
}

// ---- Overview ----

void PrintRun(const std::string& name, const summary::EventAccumulator& run) {
  const summary::RunTags tags = run.GetTags();
  std::printf("Run %s  (%zu event file%s)\n", name.c_str(), run.files().size(),
              run.files().size() == 1 ? "" : "s");
  PrintReadProblems(stdout, name, run);
  if (tags.graph || tags.meta_graph) {
    const auto graph = run.Graph();
    std::printf("  graph: %d nodes (%s%s%s)\n", graph ? graph->node_size() : 0, tags.graph ? "graph_def" : "",
                tags.graph && tags.meta_graph ? " + " : "", tags.meta_graph ? "meta_graph_def" : "");
  } else {
    std::printf("  graph: -\n");
  }
  if (!run.SessionLogs().empty()) {
    std::printf("  session logs:\n");
    for (int status : {1, 2, 3}) {
      std::vector<const summary::SessionLogEvent*> logs;
      for (const auto& log : run.SessionLogs()) {
        if (log.log.status() == status) logs.push_back(&log);
      }
      if (logs.empty()) continue;
      std::printf("    %-11s %3zu  steps %s", SessionStatusName(status), logs.size(),
                  logs.size() == 1 ? StrCat(logs[0]->step).c_str()
                                   : StrCat(logs.front()->step, "..", logs.back()->step).c_str());
      if (!logs.back()->log.checkpoint_path().empty()) {
        std::printf("  last: %s", logs.back()->log.checkpoint_path().c_str());
      }
      std::printf("\n");
    }
  }
  if (run.purged_count() > 0) {
    std::printf("  purged after restarts: %lld values\n", static_cast<long long>(run.purged_count()));
  }
  if (!tags.scalars.empty()) {
    std::printf("  scalars:\n    %-32s %7s  %-14s %14s  %s\n", "tag", "points", "steps", "latest",
                "min .. max");
    for (const std::string& tag : tags.scalars) {
      const auto& s = run.Scalars(tag);
      double lo = s.front().value, hi = s.front().value;
      for (const auto& e : s) lo = std::min(lo, e.value), hi = std::max(hi, e.value);
      std::printf("    %-32s %7zu  %-14s %14s  %s .. %s\n", tag.c_str(), s.size(), StepRange(s).c_str(),
                  FormatNumber(s.back().value).c_str(), FormatNumber(lo).c_str(), FormatNumber(hi).c_str());
    }
  }
  if (!tags.histograms.empty()) {
    std::printf("  histograms:\n    %-32s %7s  %-14s %s\n", "tag", "points", "steps",
                "latest: num, mean, min .. max");
    for (const std::string& tag : tags.histograms) {
      const auto& h = run.Histograms(tag);
      const auto& last = h.back();
      std::printf("    %-32s %7zu  %-14s %s, %s, %s .. %s\n", tag.c_str(), h.size(), StepRange(h).c_str(),
                  FormatNumber(last.num).c_str(),
                  last.num > 0 ? FormatNumber(last.sum / last.num).c_str() : "-",
                  FormatNumber(last.min).c_str(), FormatNumber(last.max).c_str());
    }
  }
  if (!tags.images.empty()) {
    std::printf("  images:\n");
    for (const std::string& tag : tags.images) {
      const auto& im = run.Images(tag);
      std::printf("    %-32s %7zu  %-14s latest %dx%d, %d channel%s\n", tag.c_str(), im.size(),
                  StepRange(im).c_str(), im.back().width, im.back().height, im.back().colorspace,
                  im.back().colorspace == 1 ? "" : "s");
    }
  }
  if (!tags.audio.empty()) {
    std::printf("  audio:\n");
    for (const std::string& tag : tags.audio) {
      const auto& a = run.Audio(tag);
      std::printf("    %-32s %7zu  %-14s latest %lld frames at %s Hz\n", tag.c_str(), a.size(),
                  StepRange(a).c_str(), static_cast<long long>(a.back().length_frames),
                  FormatNumber(a.back().sample_rate).c_str());
    }
  }
  if (!tags.tensors.empty()) {
    std::printf("  tensors:\n");
    for (const std::string& tag : tags.tensors) {
      const auto& t = run.Tensors(tag);
      const auto* meta = run.SummaryMetadata(tag);
      const std::string plugin = meta ? meta->plugin_data().plugin_name() : "";
      std::printf("    %-32s %7zu  %-14s plugin %s\n", tag.c_str(), t.size(), StepRange(t).c_str(),
                  plugin.empty() ? "-" : plugin.c_str());
    }
  }
  if (!tags.run_metadata.empty()) {
    std::printf("  run metadata: %s\n", StrJoin(tags.run_metadata, ", ").c_str());
  }
  std::printf("\n");
}

// ---- One tag ----

bool PrintTag(const std::string& name, const summary::EventAccumulator& run, const std::string& tag) {
  const summary::RunTags tags = run.GetTags();
  if (std::binary_search(tags.scalars.begin(), tags.scalars.end(), tag)) {
    const auto& series = run.Scalars(tag);
    std::printf("Run %s, scalar %s (%zu points)\n", name.c_str(), tag.c_str(), series.size());
    std::printf("  %10s  %-23s  %s\n", "step", "wall time (UTC)", "value");
    std::vector<double> values;
    for (const auto& e : series) {
      std::printf("  %10lld  %-23s  %s\n", static_cast<long long>(e.step), FormatTime(e.wall_time).c_str(),
                  FormatNumber(e.value).c_str());
      values.push_back(e.value);
    }
    const auto [lo, hi] = std::minmax_element(series.begin(), series.end(),
                                              [](const auto& a, const auto& b) { return a.value < b.value; });
    std::printf("  %s\n  min %s at step %lld, max %s at step %lld\n\n", Sparkline(values).c_str(),
                FormatNumber(lo->value).c_str(), static_cast<long long>(lo->step),
                FormatNumber(hi->value).c_str(), static_cast<long long>(hi->step));
    return true;
  }
  if (std::binary_search(tags.histograms.begin(), tags.histograms.end(), tag)) {
    const auto& series = run.Histograms(tag);
    std::printf("Run %s, histogram %s (%zu points)\n", name.c_str(), tag.c_str(), series.size());
    std::printf("  %10s  %10s  %12s  %12s  %12s  %12s\n", "step", "num", "mean", "stddev", "min", "max");
    std::vector<double> means;
    for (const auto& h : series) {
      const double mean = h.num > 0 ? h.sum / h.num : 0;
      const double var = h.num > 0 ? std::max(0.0, h.sum_squares / h.num - mean * mean) : 0;
      std::printf("  %10lld  %10s  %12s  %12s  %12s  %12s\n", static_cast<long long>(h.step),
                  FormatNumber(h.num).c_str(), FormatNumber(mean).c_str(),
                  FormatNumber(std::sqrt(var)).c_str(), FormatNumber(h.min).c_str(),
                  FormatNumber(h.max).c_str());
      means.push_back(mean);
    }
    std::printf("  mean: %s\n", Sparkline(means).c_str());
    // The latest histogram as TensorBoard draws it: counts on uniform bins over the series'
    // range (the same range for every step, so steps compare).
    const summary::UniformHistogram latest = summary::RebinSeries(series).back();
    std::vector<double> counts;
    double most = 0;
    for (const auto& bin : latest.bins) counts.push_back(bin.count), most = std::max(most, bin.count);
    std::printf("  step %lld on %zu bins over [%s, %s]: %s  (tallest %s)\n\n",
                static_cast<long long>(latest.step), latest.bins.size(),
                FormatNumber(latest.bins.front().left).c_str(),
                FormatNumber(latest.bins.back().left + latest.bins.back().width).c_str(),
                Sparkline(counts).c_str(), FormatNumber(most).c_str());
    return true;
  }
  return false;
}

EventRuns LoadLogdir(const std::string& logdir) {
  EventRuns runs = summary::LoadRuns(logdir);
  if (runs.empty()) {
    NotFound("No event files (names containing \"tfevents\") under ", logdir);
  }
  return runs;
}

// What the command prints (and writes with --html) for the loaded runs.
void Show(const std::string& logdir, const EventRuns& runs, const std::string& tag, const std::string& html) {
  if (!html.empty()) {
    WriteFileAtomically(html, EventsHtmlPage(logdir, runs));
    std::printf("Wrote %s (%zu run%s)\n", html.c_str(), runs.size(), runs.size() == 1 ? "" : "s");
  }
  if (tag.empty() && !html.empty()) {
    for (const auto& [name, run] : runs) PrintReadProblems(stderr, name, run);
    return;
  }
  if (!tag.empty()) {
    for (const auto& [name, run] : runs) PrintReadProblems(stderr, name, run);
    bool found = false;
    for (const auto& [name, run] : runs) found = PrintTag(name, run, tag) || found;
    if (!found) {
      std::vector<std::string> known;
      for (const auto& [name, run] : runs) {
        const summary::RunTags tags = run.GetTags();
        known.insert(known.end(), tags.scalars.begin(), tags.scalars.end());
        known.insert(known.end(), tags.histograms.begin(), tags.histograms.end());
      }
      std::sort(known.begin(), known.end());
      known.erase(std::unique(known.begin(), known.end()), known.end());
      NotFound("No scalar or histogram tag '", tag, "' in any run under ", logdir,
               known.empty() ? std::string("; the runs have none")
                             : StrCat("; known tags: ", StrJoin(known, ", ")));
    }
    return;
  }
  std::printf("Logdir %s: %zu run%s\n\n", logdir.c_str(), runs.size(), runs.size() == 1 ? "" : "s");
  for (const auto& [name, run] : runs) PrintRun(name, run);
}

}  // namespace

void AddEventsCommand(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "events", "Show the runs, tags and values of TensorBoard event files under a logdir");
  auto logdir = std::make_shared<std::string>();
  auto tag = std::make_shared<std::string>();
  auto html = std::make_shared<std::string>();
  cmd->add_option("logdir", *logdir, "Log directory (or one event file)")->required();
  cmd->add_option("--tag", *tag, "Print this scalar (or histogram) series as a table and sparkline");
  cmd->add_option("--html", *html, "Write a self-contained HTML page of charts to this file");
  cmd->callback([=] {
    const EventRuns runs = LoadLogdir(*logdir);
    Show(*logdir, runs, *tag, *html);
    // Everything readable was shown; a corrupt record still makes the command fail, so that
    // scripts notice it.
    size_t corrupt = 0;
    for (const auto& [name, run] : runs) corrupt += run.corrupt_records().size();
    if (corrupt > 0) {
      std::fflush(stdout);  // what was shown comes before the error that ends the command
      DataLoss(corrupt, " event file", corrupt == 1 ? " has" : "s have",
               " an unreadable record (see above); everything before it was shown");
    }
  });
}

}  // namespace flowtrain::tools

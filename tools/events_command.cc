// `flowtrain events LOGDIR [--tag TAG] [--html OUT]`: what TensorBoard would show for the runs
// under LOGDIR, for users without TensorBoard (like `tensorboard --inspect`, plus values).
//
//   $ flowtrain events runs/digits                 # runs, tags, step ranges, latest values
//   $ flowtrain events runs/digits --tag loss      # the series as a table and a sparkline
//   $ flowtrain events runs/digits --html out.html # one self-contained page of SVG charts
//
// LOGDIR may also be a single event file. Restarts are handled as TensorBoard does (values
// past a SessionLog START are dropped), see summary/event_accumulator.h.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/summary/event_accumulator.h"
#include "tools/commands.h"

namespace flowtrain::tools {
namespace {

using Runs = std::vector<std::pair<std::string, summary::EventAccumulator>>;

std::string FormatNumber(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

std::string FormatTime(double wall_time) {
  const auto secs = static_cast<std::time_t>(wall_time);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
  const int millis = static_cast<int>((wall_time - std::floor(wall_time)) * 1000);
  char out[80];
  std::snprintf(out, sizeof(out), "%s.%03d", buf, millis);
  return out;
}

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

const char* StatusName(int status) {
  switch (status) {
    case tensorflow::SessionLog::START: return "start";
    case tensorflow::SessionLog::STOP: return "stop";
    case tensorflow::SessionLog::CHECKPOINT: return "checkpoint";
    default: return "unspecified";
  }
}

// ---- Overview ----

void PrintRun(const std::string& name, const summary::EventAccumulator& run) {
  const summary::RunTags tags = run.GetTags();
  std::printf("Run %s  (%zu event file%s)\n", name.c_str(), run.files().size(),
              run.files().size() == 1 ? "" : "s");
  if (tags.graph || tags.meta_graph) {
    const auto graph = run.Graph();
    std::printf("  graph: %d nodes (%s%s%s)\n", graph ? graph->node_size() : 0,
                tags.graph ? "graph_def" : "", tags.graph && tags.meta_graph ? " + " : "",
                tags.meta_graph ? "meta_graph_def" : "");
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
      std::printf("    %-11s %3zu  steps %s", StatusName(status), logs.size(),
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
      std::printf("    %-32s %7zu  %-14s %14s  %s .. %s\n", tag.c_str(), s.size(),
                  StepRange(s).c_str(), FormatNumber(s.back().value).c_str(),
                  FormatNumber(lo).c_str(), FormatNumber(hi).c_str());
    }
  }
  if (!tags.histograms.empty()) {
    std::printf("  histograms:\n    %-32s %7s  %-14s %s\n", "tag", "points", "steps",
                "latest: num, mean, min .. max");
    for (const std::string& tag : tags.histograms) {
      const auto& h = run.Histograms(tag);
      const auto& last = h.back();
      std::printf("    %-32s %7zu  %-14s %s, %s, %s .. %s\n", tag.c_str(), h.size(),
                  StepRange(h).c_str(), FormatNumber(last.num).c_str(),
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
      std::printf("  %10lld  %-23s  %s\n", static_cast<long long>(e.step),
                  FormatTime(e.wall_time).c_str(), FormatNumber(e.value).c_str());
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
    std::printf("  mean: %s\n\n", Sparkline(means).c_str());
    return true;
  }
  return false;
}

// ---- HTML ----

std::string Escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

constexpr double kW = 640, kH = 240, kLeft = 70, kRight = 16, kTop = 12, kBottom = 30;

struct Axes {
  double x0, x1, y0, y1;
  double X(double x) const { return kLeft + (x1 > x0 ? (x - x0) / (x1 - x0) : 0.5) * (kW - kLeft - kRight); }
  double Y(double y) const { return kTop + (y1 > y0 ? (y1 - y) / (y1 - y0) : 0.5) * (kH - kTop - kBottom); }
};

std::string SvgFrame(const Axes& a, const std::string& x_label) {
  std::string svg = StrCat("<svg viewBox=\"0 0 ", kW, " ", kH, "\" width=\"", kW, "\" height=\"", kH,
                           "\" xmlns=\"http://www.w3.org/2000/svg\">");
  StrAppend(&svg, "<rect x=\"", kLeft, "\" y=\"", kTop, "\" width=\"", kW - kLeft - kRight,
            "\" height=\"", kH - kTop - kBottom, "\" fill=\"#fafafa\" stroke=\"#ccc\"/>");
  for (int i = 0; i <= 4; ++i) {
    const double y = a.y0 + (a.y1 - a.y0) * i / 4;
    StrAppend(&svg, "<line x1=\"", kLeft, "\" x2=\"", kW - kRight, "\" y1=\"", a.Y(y), "\" y2=\"",
              a.Y(y), "\" stroke=\"#eee\"/><text x=\"", kLeft - 4, "\" y=\"", a.Y(y) + 4,
              "\" text-anchor=\"end\" font-size=\"11\">", Escape(FormatNumber(y)), "</text>");
  }
  StrAppend(&svg, "<text x=\"", kLeft, "\" y=\"", kH - 10, "\" font-size=\"11\">",
            Escape(FormatNumber(a.x0)), "</text><text x=\"", kW - kRight, "\" y=\"", kH - 10,
            "\" text-anchor=\"end\" font-size=\"11\">", Escape(FormatNumber(a.x1)),
            "</text><text x=\"", (kW + kLeft) / 2, "\" y=\"", kH - 10,
            "\" text-anchor=\"middle\" font-size=\"11\" fill=\"#666\">", x_label, "</text>");
  return svg;
}

std::string ScalarChart(const std::vector<summary::ScalarEvent>& series) {
  Axes a{static_cast<double>(series.front().step), static_cast<double>(series.front().step),
         series.front().value, series.front().value};
  for (const auto& e : series) {
    a.x0 = std::min<double>(a.x0, e.step), a.x1 = std::max<double>(a.x1, e.step);
    if (std::isfinite(e.value)) a.y0 = std::min(a.y0, e.value), a.y1 = std::max(a.y1, e.value);
  }
  std::string svg = SvgFrame(a, "step");
  std::string points;
  for (const auto& e : series) {
    if (std::isfinite(e.value)) StrAppend(&points, a.X(e.step), ",", a.Y(e.value), " ");
  }
  StrAppend(&svg, "<polyline fill=\"none\" stroke=\"#e8710a\" stroke-width=\"1.5\" points=\"", points,
            "\"/>");
  if (series.size() <= 60) {
    for (const auto& e : series) {
      if (!std::isfinite(e.value)) continue;
      StrAppend(&svg, "<circle cx=\"", a.X(e.step), "\" cy=\"", a.Y(e.value),
                "\" r=\"2.5\" fill=\"#e8710a\"><title>step ", e.step, ": ",
                Escape(FormatNumber(e.value)), "</title></circle>");
    }
  }
  return svg + "</svg>";
}

// TensorBoard's "overlay" view: one density curve per step (at most 12 steps, evenly picked),
// older steps lighter.
std::string HistogramChart(const std::vector<summary::HistogramEvent>& series) {
  std::vector<const summary::HistogramEvent*> picked;
  const size_t n = std::min<size_t>(12, series.size());
  for (size_t i = 0; i < n; ++i) picked.push_back(&series[n == 1 ? series.size() - 1 : i * (series.size() - 1) / (n - 1)]);
  Axes a{std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(), 0, 0};
  for (const auto* h : picked) {
    for (const auto& b : h->buckets) {
      a.x0 = std::min(a.x0, b.left), a.x1 = std::max(a.x1, b.right);
      const double width = b.right - b.left;
      a.y1 = std::max(a.y1, width > 0 ? b.count / width : b.count);
    }
  }
  if (!std::isfinite(a.x0)) a.x0 = a.x1 = 0;
  std::string svg = SvgFrame(a, "value (density per step; darker = later)");
  for (size_t i = 0; i < picked.size(); ++i) {
    const double shade = picked.size() == 1 ? 1.0 : 0.25 + 0.75 * i / (picked.size() - 1);
    std::string points;
    for (const auto& b : picked[i]->buckets) {
      const double width = b.right - b.left;
      const double density = width > 0 ? b.count / width : b.count;
      StrAppend(&points, a.X(b.left), ",", a.Y(density), " ", a.X(b.right), ",", a.Y(density), " ");
    }
    StrAppend(&svg, "<polyline fill=\"none\" stroke=\"#1967d2\" stroke-opacity=\"", shade,
              "\" stroke-width=\"1.2\" points=\"", points, "\"><title>step ", picked[i]->step,
              "</title></polyline>");
  }
  return svg + "</svg>";
}

std::string HtmlPage(const std::string& logdir, const Runs& runs) {
  std::string html = StrCat(
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>flowtrain events: ",
      Escape(logdir),
      "</title><style>body{font-family:sans-serif;margin:24px;color:#222}"
      "h2{border-bottom:1px solid #ddd;padding-bottom:4px}.chart{display:inline-block;"
      "margin:8px 16px 16px 0;vertical-align:top}.chart h4{margin:4px 0;font-family:monospace}"
      "td,th{padding:2px 10px;text-align:left}</style></head><body>\n<h1>Events under ",
      Escape(logdir), "</h1>\n");
  for (const auto& [name, run] : runs) {
    const summary::RunTags tags = run.GetTags();
    StrAppend(&html, "<h2>Run ", Escape(name), "</h2>\n<p>", run.files().size(), " event file(s); graph: ");
    const auto graph = run.Graph();
    StrAppend(&html, graph ? StrCat(graph->node_size(), " nodes") : std::string("none"), "</p>\n");
    if (!run.SessionLogs().empty()) {
      StrAppend(&html, "<table><tr><th>session log</th><th>step</th><th>time (UTC)</th><th>checkpoint</th></tr>");
      for (const auto& log : run.SessionLogs()) {
        StrAppend(&html, "<tr><td>", StatusName(log.log.status()), "</td><td>", log.step, "</td><td>",
                  FormatTime(log.wall_time), "</td><td>", Escape(log.log.checkpoint_path()), "</td></tr>");
      }
      StrAppend(&html, "</table>\n");
    }
    for (const std::string& tag : tags.scalars) {
      const auto& s = run.Scalars(tag);
      StrAppend(&html, "<div class=\"chart\"><h4>", Escape(tag), " (scalar, latest ",
                Escape(FormatNumber(s.back().value)), " at step ", s.back().step, ")</h4>",
                ScalarChart(s), "</div>\n");
    }
    for (const std::string& tag : tags.histograms) {
      const auto& h = run.Histograms(tag);
      StrAppend(&html, "<div class=\"chart\"><h4>", Escape(tag), " (histogram, ", h.size(),
                " steps)</h4>", HistogramChart(h), "</div>\n");
    }
    for (const std::string& tag : tags.images) {
      StrAppend(&html, "<p>image ", Escape(tag), ": ", run.Images(tag).size(), " image(s)</p>\n");
    }
    for (const std::string& tag : tags.audio) {
      StrAppend(&html, "<p>audio ", Escape(tag), ": ", run.Audio(tag).size(), " clip(s)</p>\n");
    }
    for (const std::string& tag : tags.tensors) {
      StrAppend(&html, "<p>tensor ", Escape(tag), ": ", run.Tensors(tag).size(), " value(s)</p>\n");
    }
  }
  return html + "</body></html>\n";
}

Runs LoadLogdir(const std::string& logdir) {
  Runs runs = summary::LoadRuns(logdir);
  if (runs.empty()) {
    NotFound("No event files (names containing \"tfevents\") under ", logdir);
  }
  return runs;
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
    const Runs runs = LoadLogdir(*logdir);
    if (!html->empty()) {
      WriteFileAtomically(*html, HtmlPage(*logdir, runs));
      std::printf("Wrote %s (%zu run%s)\n", html->c_str(), runs.size(), runs.size() == 1 ? "" : "s");
      if (tag->empty()) return;
    }
    if (!tag->empty()) {
      bool found = false;
      for (const auto& [name, run] : runs) found = PrintTag(name, run, *tag) || found;
      if (!found) {
        std::vector<std::string> known;
        for (const auto& [name, run] : runs) {
          const summary::RunTags tags = run.GetTags();
          known.insert(known.end(), tags.scalars.begin(), tags.scalars.end());
          known.insert(known.end(), tags.histograms.begin(), tags.histograms.end());
        }
        std::sort(known.begin(), known.end());
        known.erase(std::unique(known.begin(), known.end()), known.end());
        NotFound("No scalar or histogram tag '", *tag, "' in any run under ", *logdir,
                 known.empty() ? std::string("; the runs have none")
                               : StrCat("; known tags: ", StrJoin(known, ", ")));
      }
      return;
    }
    std::printf("Logdir %s: %zu run%s\n\n", logdir->c_str(), runs.size(), runs.size() == 1 ? "" : "s");
    for (const auto& [name, run] : runs) PrintRun(name, run);
  });
}

}  // namespace flowtrain::tools

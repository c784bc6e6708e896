#include "tools/events_page.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <string_view>

#include "flowtrain/core/str_util.h"
#include "flowtrain/summary/axis_ticks.h"
#include "flowtrain/summary/histogram_bins.h"
#include "tools/events_format.h"

namespace flowtrain::tools {
namespace {

std::string Escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// `v` with `decimals` digits after the point: SVG coordinates to a tenth of a pixel (the
// shortest exact form would be 17 digits long), opacities to a hundredth.
std::string Fixed(double v, int decimals) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  return buf;
}
std::string Px(double v) { return Fixed(v, 1); }

std::string Base64(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t group = 0;
    for (size_t j = 0; j < 3; ++j) {
      group = (group << 8) | (j < n ? static_cast<unsigned char>(bytes[i + j]) : 0);
    }
    for (size_t j = 0; j < 4; ++j) {
      out += j <= n ? kAlphabet[(group >> (18 - 6 * j)) & 63] : '=';
    }
  }
  return out;
}

// The MIME type of an encoded image summary by its magic bytes; empty if not one browsers show.
std::string ImageMimeType(std::string_view bytes) {
  if (bytes.starts_with("\x89PNG\r\n\x1a\n")) return "image/png";
  if (bytes.starts_with("\xff\xd8\xff")) return "image/jpeg";
  if (bytes.starts_with("GIF87a") || bytes.starts_with("GIF89a")) return "image/gif";
  return "";
}

// Run colours, as distinct as a few can be; runs past the last reuse them in order.
constexpr const char* kRunColors[] = {"#e8710a", "#1967d2", "#12b5cb", "#d93025", "#9334e6",
                                      "#188038", "#e52592", "#f9ab00", "#5f6368", "#7cb342"};

std::string RunColor(size_t run_index) {
  return kRunColors[run_index % (sizeof(kRunColors) / sizeof(kRunColors[0]))];
}

constexpr double kW = 640, kH = 240, kLeft = 70, kRight = 16, kTop = 12, kBottom = 30;

// A chart's two axes, each widened to round ticks, and the mapping from data to pixels.
struct Axes {
  summary::AxisTicks x, y;
  Axes(double x0, double x1, double y0, double y1)
      : x(summary::NiceTicks(x0, x1)), y(summary::NiceTicks(y0, y1)) {}
  double X(double v) const { return kLeft + (v - x.lo) / (x.hi - x.lo) * (kW - kLeft - kRight); }
  double Y(double v) const { return kTop + (y.hi - v) / (y.hi - y.lo) * (kH - kTop - kBottom); }
};

// The SVG's opening, plot area, gridlines and tick labels; the caller adds lines and "</svg>".
std::string SvgFrame(const Axes& a, const std::string& x_label) {
  std::string svg = StrCat("<svg viewBox=\"0 0 ", kW, " ", kH, "\" width=\"", kW, "\" height=\"", kH,
                           "\" xmlns=\"http://www.w3.org/2000/svg\">");
  StrAppend(&svg, "<rect x=\"", kLeft, "\" y=\"", kTop, "\" width=\"", kW - kLeft - kRight, "\" height=\"",
            kH - kTop - kBottom, "\" fill=\"#fafafa\" stroke=\"#ccc\"/>");
  for (double v : a.y.values) {
    const std::string y = Px(a.Y(v));
    StrAppend(&svg, "<line x1=\"", kLeft, "\" x2=\"", kW - kRight, "\" y1=\"", y, "\" y2=\"", y,
              "\" stroke=\"#e4e4e4\"/><text x=\"", kLeft - 4, "\" y=\"", Px(a.Y(v) + 4),
              "\" text-anchor=\"end\" font-size=\"11\">", summary::FormatTick(v), "</text>");
  }
  for (double v : a.x.values) {
    const std::string x = Px(a.X(v));
    StrAppend(&svg, "<line x1=\"", x, "\" x2=\"", x, "\" y1=\"", kTop, "\" y2=\"", kH - kBottom,
              "\" stroke=\"#efefef\"/><text x=\"", x, "\" y=\"", kH - kBottom + 13,
              "\" text-anchor=\"middle\" font-size=\"11\">", summary::FormatTick(v), "</text>");
  }
  StrAppend(&svg, "<text x=\"", (kW + kLeft) / 2, "\" y=\"", kH - 3,
            "\" text-anchor=\"middle\" font-size=\"11\" fill=\"#666\">", Escape(x_label), "</text>");
  return svg;
}

// One scalar series of one run.
struct RunSeries {
  std::string run;
  size_t run_index = 0;  // picks the colour
  const std::vector<summary::ScalarEvent>* events = nullptr;
};

// TensorBoard's scalar card: every run's series of one tag on one pair of axes.
std::string ScalarChart(const std::vector<RunSeries>& runs) {
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  for (const RunSeries& r : runs) {
    for (const auto& e : *r.events) {
      x0 = std::min<double>(x0, e.step), x1 = std::max<double>(x1, e.step);
      if (std::isfinite(e.value)) y0 = std::min(y0, e.value), y1 = std::max(y1, e.value);
    }
  }
  if (y0 > y1) y0 = y1 = 0;  // no finite value at all: an empty plot around 0
  const Axes a(x0, x1, y0, y1);
  std::string svg = SvgFrame(a, "step");
  for (const RunSeries& r : runs) {
    const std::string color = RunColor(r.run_index);
    std::string points;
    for (const auto& e : *r.events) {
      if (std::isfinite(e.value)) StrAppend(&points, Px(a.X(e.step)), ",", Px(a.Y(e.value)), " ");
    }
    StrAppend(&svg, "<polyline fill=\"none\" stroke=\"", color, "\" stroke-width=\"1.5\" points=\"", points,
              "\"><title>", Escape(r.run), "</title></polyline>");
    if (r.events->size() > 60) continue;
    for (const auto& e : *r.events) {
      if (!std::isfinite(e.value)) continue;
      StrAppend(&svg, "<circle cx=\"", Px(a.X(e.step)), "\" cy=\"", Px(a.Y(e.value)), "\" r=\"2.5\" fill=\"",
                color, "\"><title>", Escape(r.run), " step ", e.step, ": ", Escape(FormatNumber(e.value)),
                "</title></circle>");
    }
  }
  return svg + "</svg>";
}

// TensorBoard's histogram card in "overlay" mode: each step re-binned onto the same 30 uniform
// bins (summary::RebinSeries) and drawn as a line through the bin counts; at most 12 steps,
// evenly picked, later ones darker.
std::string HistogramChart(const std::vector<summary::HistogramEvent>& series, size_t run_index) {
  const std::vector<summary::UniformHistogram> binned = summary::RebinSeries(series);
  std::vector<const summary::UniformHistogram*> picked;
  const size_t n = std::min<size_t>(12, binned.size());
  for (size_t i = 0; i < n; ++i) {
    picked.push_back(&binned[n == 1 ? binned.size() - 1 : i * (binned.size() - 1) / (n - 1)]);
  }
  double x0 = 0, x1 = 0, y1 = 0;
  if (!binned.empty() && !binned.front().bins.empty()) {
    x0 = binned.front().bins.front().left;
    x1 = binned.front().bins.back().left + binned.front().bins.back().width;
  }
  for (const auto* h : picked) {
    for (const auto& bin : h->bins) y1 = std::max(y1, bin.count);
  }
  const Axes a(x0, x1, 0, y1 > 0 ? y1 : 1);
  std::string svg = SvgFrame(a, "value (count per bin; darker = later step)");
  const std::string color = RunColor(run_index);
  for (size_t i = 0; i < picked.size(); ++i) {
    const double opacity = picked.size() == 1 ? 1.0 : 0.25 + 0.75 * i / (picked.size() - 1);
    std::string points;
    for (const auto& bin : picked[i]->bins) {
      StrAppend(&points, Px(a.X(bin.left + bin.width / 2)), ",", Px(a.Y(bin.count)), " ");
    }
    StrAppend(&svg, "<polyline fill=\"none\" stroke=\"", color, "\" stroke-opacity=\"", Fixed(opacity, 2),
              "\" stroke-width=\"1.2\" points=\"", points, "\"><title>step ", picked[i]->step,
              "</title></polyline>");
  }
  return svg + "</svg>";
}

// One image of an image summary as an <img> with its step, or a note when the bytes are not an
// image format browsers show.
std::string ImageFigure(const summary::ImageEvent& image) {
  const std::string mime = ImageMimeType(image.encoded_image);
  std::string out = "<figure>";
  if (mime.empty()) {
    StrAppend(&out, "<div class=\"note\">", image.encoded_image.size(),
              " bytes that are not a PNG, JPEG or GIF image</div>");
  } else {
    StrAppend(&out, "<img alt=\"step ", image.step, "\" width=\"", std::max(image.width, 96),
              "\" src=\"data:", mime, ";base64,", Base64(image.encoded_image), "\">");
  }
  StrAppend(&out, "<figcaption>step ", image.step, " (", image.width, "x", image.height,
            ")</figcaption></figure>");
  return out;
}

// Steps an image card can offer; longer series are sampled evenly, the first and last kept.
constexpr size_t kImageSteps = 10;

// The CSS that makes image cards' step buttons work without a script: the i-th radio button of
// a card, when checked, shows the card's i-th figure.
std::string ImageStepStyle() {
  std::string css =
      ".steps input{display:none}.steps label{display:inline-block;font-size:12px;"
      "padding:1px 6px;margin:0 2px 4px 0;border:1px solid #ccc;border-radius:3px;"
      "cursor:pointer}.steps input:checked+label{background:#e8eaed;font-weight:bold}"
      ".steps figure{display:none}";
  for (size_t i = 1; i <= kImageSteps; ++i) {
    StrAppend(&css, ".steps input:nth-of-type(", i, "):checked~figure:nth-of-type(", i, "){display:block}");
  }
  return css;
}

// TensorBoard's image card, its step slider made of radio buttons: one button per step (at
// most kImageSteps, evenly picked), the latest shown first. `card` names the buttons' group
// and must be unique on the page.
std::string ImageCard(const std::vector<summary::ImageEvent>& images, const std::string& card) {
  std::vector<const summary::ImageEvent*> picked;
  const size_t n = std::min(kImageSteps, images.size());
  for (size_t i = 0; i < n; ++i) {
    picked.push_back(&images[n == 1 ? images.size() - 1 : i * (images.size() - 1) / (n - 1)]);
  }
  std::string out = "<div class=\"steps\">";
  for (size_t i = 0; i < picked.size(); ++i) {
    const std::string id = StrCat(card, "-", i);
    StrAppend(&out, "<input type=\"radio\" name=\"", card, "\" id=\"", id, "\"",
              i + 1 == picked.size() ? " checked" : "", "><label for=\"", id, "\">step ", picked[i]->step,
              "</label>");
  }
  for (const auto* image : picked) out += ImageFigure(*image);
  return out + "</div>";
}

// The run's unreadable records and unfinished files, as list items; empty if none.
std::string ReadProblemsHtml(const summary::EventAccumulator& run) {
  std::string out;
  for (const auto& bad : run.corrupt_records()) {
    StrAppend(&out, "<li class=\"error\">", Escape(bad.message),
              " &mdash; the events before it are shown, the rest of that file is not</li>");
  }
  for (const auto& partial : run.partial_records()) {
    StrAppend(&out, "<li>", Escape(partial.file), " ends in an unfinished record (", partial.bytes,
              " bytes at offset ", partial.offset,
              "): its writer is still running or was stopped while writing</li>");
  }
  return out.empty() ? out : "<ul>" + out + "</ul>";
}

// Every tag of one kind across the runs, sorted, each with the indexes of the runs that have it.
std::map<std::string, std::vector<size_t>> TagsAcrossRuns(const EventRuns& runs,
                                                          std::vector<std::string> summary::RunTags::*kind) {
  std::map<std::string, std::vector<size_t>> tags;
  for (size_t i = 0; i < runs.size(); ++i) {
    const summary::RunTags run_tags = runs[i].second.GetTags();
    for (const std::string& tag : run_tags.*kind) tags[tag].push_back(i);
  }
  return tags;
}

std::string Legend(const EventRuns& runs, const std::vector<size_t>& run_indexes) {
  std::string out = "<div class=\"legend\">";
  for (size_t i : run_indexes) {
    StrAppend(&out, "<span><i style=\"background:", RunColor(i), "\"></i>", Escape(runs[i].first), "</span>");
  }
  return out + "</div>";
}

}  // namespace

std::string EventsHtmlPage(const std::string& logdir, const EventRuns& runs) {
  std::string html = StrCat(
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>flowtrain events: ", Escape(logdir),
      "</title><style>body{font-family:sans-serif;margin:24px;color:#222}"
      "h2{border-bottom:1px solid #ddd;padding-bottom:4px}.chart{display:inline-block;"
      "margin:8px 16px 16px 0;vertical-align:top}.chart h4{margin:4px 0;font-family:monospace}"
      ".legend span{margin-right:14px;font-size:13px}.legend i{display:inline-block;width:10px;"
      "height:10px;margin-right:4px;border-radius:2px}figure{display:inline-block;margin:4px 8px 4px 0}"
      "img{image-rendering:pixelated;border:1px solid "
      "#ddd;max-width:480px;height:auto}figcaption{font-size:12px;color:#555}"
      ".error{color:#b00020}.note{color:#666;font-size:13px}"
      "td,th{padding:2px 10px;text-align:left}",
      ImageStepStyle(), "</style></head><body>\n<h1>Events under ", Escape(logdir), "</h1>\n<h2>Runs</h2>\n");
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& [name, run] = runs[i];
    StrAppend(&html, "<h3><span style=\"color:", RunColor(i), "\">&#9632;</span> ", Escape(name),
              "</h3>\n<p>", run.files().size(), " event file(s); graph: ");
    const auto graph = run.Graph();
    StrAppend(&html, graph ? StrCat(graph->node_size(), " nodes") : std::string("none"), "</p>\n",
              ReadProblemsHtml(run));
    if (!run.SessionLogs().empty()) {
      StrAppend(&html,
                "<table><tr><th>session log</th><th>step</th><th>time (UTC)</th><th>checkpoint</th></tr>");
      for (const auto& log : run.SessionLogs()) {
        StrAppend(&html, "<tr><td>", SessionStatusName(log.log.status()), "</td><td>", log.step, "</td><td>",
                  FormatTime(log.wall_time), "</td><td>", Escape(log.log.checkpoint_path()), "</td></tr>");
      }
      StrAppend(&html, "</table>\n");
    }
  }
  const auto scalar_tags = TagsAcrossRuns(runs, &summary::RunTags::scalars);
  if (!scalar_tags.empty()) html += "<h2>Scalars</h2>\n";
  for (const auto& [tag, run_indexes] : scalar_tags) {
    std::vector<RunSeries> series;
    std::string latest;
    for (size_t i : run_indexes) {
      const auto& events = runs[i].second.Scalars(tag);
      series.push_back({runs[i].first, i, &events});
      StrAppend(&latest, latest.empty() ? "" : "; ", run_indexes.size() > 1 ? runs[i].first + " " : "",
                FormatNumber(events.back().value), " at step ", events.back().step);
    }
    StrAppend(&html, "<div class=\"chart\"><h4>", Escape(tag), " (scalar, latest ", Escape(latest), ")</h4>",
              Legend(runs, run_indexes), ScalarChart(series), "</div>\n");
  }
  const auto histogram_tags = TagsAcrossRuns(runs, &summary::RunTags::histograms);
  if (!histogram_tags.empty()) html += "<h2>Histograms</h2>\n";
  for (const auto& [tag, run_indexes] : histogram_tags) {
    for (size_t i : run_indexes) {
      const auto& h = runs[i].second.Histograms(tag);
      StrAppend(&html, "<div class=\"chart\"><h4>", Escape(tag), " (histogram, ", h.size(), " steps)</h4>",
                Legend(runs, {i}), HistogramChart(h, i), "</div>\n");
    }
  }
  const auto image_tags = TagsAcrossRuns(runs, &summary::RunTags::images);
  if (!image_tags.empty()) html += "<h2>Images</h2>\n";
  size_t cards = 0;
  for (const auto& [tag, run_indexes] : image_tags) {
    for (size_t i : run_indexes) {
      const auto& images = runs[i].second.Images(tag);
      StrAppend(&html, "<div class=\"chart\"><h4>", Escape(tag), " (image, ", images.size(), " steps)</h4>",
                Legend(runs, {i}), ImageCard(images, StrCat("image", cards++)), "</div>\n");
    }
  }
  std::string others;
  for (const auto& [name, run] : runs) {
    const summary::RunTags tags = run.GetTags();
    for (const std::string& tag : tags.audio) {
      StrAppend(&others, "<li>", Escape(name), ": audio ", Escape(tag), ", ", run.Audio(tag).size(),
                " clip(s)</li>\n");
    }
    for (const std::string& tag : tags.tensors) {
      StrAppend(&others, "<li>", Escape(name), ": tensor ", Escape(tag), ", ", run.Tensors(tag).size(),
                " value(s)</li>\n");
    }
  }
  if (!others.empty()) StrAppend(&html, "<h2>Other summaries</h2>\n<ul>", others, "</ul>\n");
  return html + "</body></html>\n";
}

}  // namespace flowtrain::tools

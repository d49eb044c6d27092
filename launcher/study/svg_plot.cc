#include "launcher/study/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace monsoon {
namespace {

constexpr const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                    "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};
constexpr double kPanelWidth = 440, kPanelHeight = 330, kPanelStep = 540, kLeft = 80, kTop = 50;

std::string Fmt(double v) { return absl::StrFormat("%.4g", v); }

// Escapes the characters SVG text cannot hold as they are.
std::string Text(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// One panel's place and scales.
struct Frame {
  double left, x_max, y_lo, y_hi;
  double X(double x) const { return left + kPanelWidth * x / x_max; }
  double Y(double y) const { return kTop + kPanelHeight * (1 - (y - y_lo) / (y_hi - y_lo)); }
};

void DrawAxes(const Frame& f, const std::string& id, std::string* svg) {
  absl::StrAppendFormat(svg,
                        "<clipPath id=\"%s\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                        "height=\"%.1f\"/></clipPath>\n"
                        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                        "fill=\"white\" stroke=\"#333\"/>\n",
                        id, f.left, kTop, kPanelWidth, kPanelHeight, f.left, kTop, kPanelWidth,
                        kPanelHeight);
  const double xs = TickStep(f.x_max, 6);
  for (double x = 0; x <= f.x_max * (1 + 1e-9); x += xs) {
    absl::StrAppendFormat(svg,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                          "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                          f.X(x), kTop, f.X(x), kTop + kPanelHeight, f.X(x),
                          kTop + kPanelHeight + 16, Fmt(x));
  }
  const double ys = TickStep(f.y_hi - f.y_lo, 6);
  for (double y = std::ceil(f.y_lo / ys) * ys; y <= f.y_hi + 1e-9; y += ys) {
    absl::StrAppendFormat(svg,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                          "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                          f.left, f.Y(y), f.left + kPanelWidth, f.Y(y), f.left - 6, f.Y(y) + 4,
                          Fmt(std::round(y / ys) * ys));
  }
}

void DrawPanel(const LinePlot& plot, const PlotPanel& panel, size_t index, std::string* svg) {
  double x_max = 0;
  for (const PlotSeries& s : panel.series) {
    for (double x : s.x) x_max = std::max(x_max, x);
    for (double x : s.marks) x_max = std::max(x_max, x);
  }
  const Frame f{kLeft + kPanelStep * index, x_max > 0 ? x_max : 1, plot.y_lo, plot.y_hi};
  const std::string id = absl::StrCat("panel", index);
  DrawAxes(f, id, svg);
  if (plot.target.has_value() && *plot.target > f.y_lo && *plot.target < f.y_hi) {
    const double y = f.Y(*plot.target);
    absl::StrAppendFormat(svg,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\" "
                          "stroke-dasharray=\"6,4\"/><text x=\"%.1f\" y=\"%.1f\" "
                          "text-anchor=\"end\" fill=\"#555\">target %s</text>\n",
                          f.left, y, f.left + kPanelWidth, y, f.left + kPanelWidth - 4, y - 4,
                          Fmt(*plot.target));
  }
  for (size_t i = 0; i < panel.series.size(); ++i) {
    const PlotSeries& s = panel.series[i];
    std::vector<std::string> points;
    for (size_t k = 0; k < s.x.size() && k < s.y.size(); ++k) {
      points.push_back(absl::StrFormat("%.1f,%.1f", f.X(s.x[k]), f.Y(s.y[k])));
    }
    absl::StrAppendFormat(svg,
                          "<polyline clip-path=\"url(#%s)\" fill=\"none\" stroke=\"%s\" "
                          "stroke-width=\"2\" points=\"%s\"/>\n",
                          id, kPalette[i % std::size(kPalette)], absl::StrJoin(points, " "));
    for (const double x : s.marks) {
      absl::StrAppendFormat(svg,
                            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"18\" "
                            "fill=\"%s\">&#215;</text>\n",
                            f.X(x), kTop + 14, kPalette[i % std::size(kPalette)]);
    }
  }
  absl::StrAppendFormat(svg,
                        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n"
                        "<text transform=\"translate(%.1f,%.1f) rotate(-90)\" "
                        "text-anchor=\"middle\">%s</text>\n",
                        f.left + kPanelWidth / 2, kTop + kPanelHeight + 36, Text(panel.x_label),
                        f.left - 48, kTop + kPanelHeight / 2, Text(plot.y_label));
}

}  // namespace

double TickStep(double range, int count) {
  const double raw = range / count;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * magnitude >= raw) return m * magnitude;
  }
  return 10 * magnitude;
}

std::string LinePlot::ToSvg() const {
  const double width = kLeft + kPanelStep * panels.size();
  const double height = 470 + 20.0 * legend.size();
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
      "font-family=\"sans-serif\" font-size=\"13\">\n<rect width=\"100%%\" height=\"100%%\" "
      "fill=\"white\"/>\n<text x=\"%.0f\" y=\"26\" text-anchor=\"middle\" font-size=\"17\">"
      "%s</text>\n",
      width, height, width / 2, Text(title));
  for (size_t i = 0; i < panels.size(); ++i) DrawPanel(*this, panels[i], i, &svg);
  for (size_t i = 0; i < legend.size(); ++i) {
    const double y = 440 + 20.0 * i;
    absl::StrAppendFormat(&svg,
                          "<line x1=\"80\" y1=\"%.0f\" x2=\"110\" y2=\"%.0f\" stroke=\"%s\" "
                          "stroke-width=\"3\"/><text x=\"118\" y=\"%.0f\">%s</text>\n",
                          y, y, kPalette[i % std::size(kPalette)], y + 4, Text(legend[i]));
  }
  return svg + "</svg>\n";
}

}  // namespace monsoon

// Line plots as SVG, written by hand (no plotting library in C++ on Debian 12): panels side by
// side that share one y axis, a polyline per series in each panel, a legend below them.
#ifndef MONSOON_LAUNCHER_STUDY_SVG_PLOT_H_
#define MONSOON_LAUNCHER_STUDY_SVG_PLOT_H_

#include <optional>
#include <string>
#include <vector>

namespace monsoon {

struct PlotSeries {
  std::vector<double> x, y;  // the same length
  // x values marked with a cross on the panel's top edge, in the series' colour: where a run
  // of it diverged.
  std::vector<double> marks;
};

struct PlotPanel {
  std::string x_label;
  // Series i is the plot's legend[i], drawn in colour i of the palette in every panel.
  std::vector<PlotSeries> series;
};

struct LinePlot {
  std::string title;
  std::string y_label;
  double y_lo = 0, y_hi = 1;     // the shared y axis; lines beyond it are clipped
  std::optional<double> target;  // a dashed horizontal line, labelled "target"
  std::vector<std::string> legend;
  std::vector<PlotPanel> panels;

  // The whole picture. Each panel's x axis runs from 0 to the largest x of its series (1
  // when none is positive), with ticks at 1, 2 or 5 times a power of ten.
  std::string ToSvg() const;
};

// A "nice" tick step for a range: 1, 2 or 5 times a power of ten, about `count` ticks.
double TickStep(double range, int count);

}  // namespace monsoon

#endif  // MONSOON_LAUNCHER_STUDY_SVG_PLOT_H_

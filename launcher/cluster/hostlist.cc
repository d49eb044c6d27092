#include "launcher/cluster/hostlist.h"

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace monsoon {
namespace {

absl::Status Malformed(const std::string& what, const std::string& text, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("malformed ", what, " '", text, "': ", why));
}

// Splits on commas that are not inside brackets.
std::vector<std::string> SplitTopLevel(const std::string& s) {
  std::vector<std::string> parts;
  std::string current;
  int depth = 0;
  for (char c : s) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  parts.push_back(current);
  return parts;
}

// Expands the contents of one bracket, "01-04,07", to zero-padded strings.
absl::StatusOr<std::vector<std::string>> ExpandRanges(const std::string& ranges,
                                                      const std::string& whole) {
  std::vector<std::string> out;
  for (absl::string_view item : absl::StrSplit(ranges, ',')) {
    std::vector<std::string> ends = absl::StrSplit(item, '-');
    uint64_t lo, hi;
    if (ends.size() > 2 || ends[0].empty() || !absl::SimpleAtoi(ends[0], &lo)) {
      return Malformed("host list", whole, absl::StrCat("bad range '", item, "'"));
    }
    hi = lo;
    if (ends.size() == 2 && (ends[1].empty() || !absl::SimpleAtoi(ends[1], &hi))) {
      return Malformed("host list", whole, absl::StrCat("bad range '", item, "'"));
    }
    if (hi < lo)
      return Malformed("host list", whole, absl::StrCat("descending range '", item, "'"));
    if (hi - lo > 100000) return Malformed("host list", whole, "range too large");
    const size_t width = ends[0].size();  // "01-04" pads to two digits
    for (uint64_t v = lo; v <= hi; ++v) {
      std::string digits = std::to_string(v);
      if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
      out.push_back(digits);
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ExpandHostlist(const std::string& hostlist) {
  std::vector<std::string> hosts;
  if (hostlist.empty()) return Malformed("host list", hostlist, "empty");
  for (const std::string& part : SplitTopLevel(hostlist)) {
    if (part.empty()) return Malformed("host list", hostlist, "empty name");
    std::vector<std::string> names = {""};
    size_t i = 0;
    while (i < part.size()) {
      if (part[i] == ']') return Malformed("host list", hostlist, "unmatched ']'");
      if (part[i] != '[') {
        for (std::string& n : names) n += part[i];
        ++i;
        continue;
      }
      const size_t close = part.find(']', i);
      if (close == std::string::npos) return Malformed("host list", hostlist, "unmatched '['");
      auto values = ExpandRanges(part.substr(i + 1, close - i - 1), hostlist);
      if (!values.ok()) return values.status();
      std::vector<std::string> product;
      for (const std::string& n : names) {
        for (const std::string& v : *values) product.push_back(n + v);
      }
      names.swap(product);
      i = close + 1;
    }
    hosts.insert(hosts.end(), names.begin(), names.end());
  }
  return hosts;
}

absl::StatusOr<std::vector<int>> ExpandTaskCounts(const std::string& counts) {
  std::vector<int> out;
  if (counts.empty()) return Malformed("task counts", counts, "empty");
  for (absl::string_view item : absl::StrSplit(counts, ',')) {
    int value, repeat = 1;
    const size_t paren = item.find("(x");
    absl::string_view number = item.substr(0, paren);
    if (paren != absl::string_view::npos) {
      if (item.back() != ')' ||
          !absl::SimpleAtoi(item.substr(paren + 2, item.size() - paren - 3), &repeat) ||
          repeat < 1) {
        return Malformed("task counts", counts, absl::StrCat("bad repeat in '", item, "'"));
      }
    }
    if (!absl::SimpleAtoi(number, &value) || value < 0) {
      return Malformed("task counts", counts, absl::StrCat("bad count '", item, "'"));
    }
    out.insert(out.end(), repeat, value);
  }
  return out;
}

}  // namespace monsoon

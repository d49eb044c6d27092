// JSON text for the files Monsoon writes by hand (summary.json, trace events): a quoted,
// escaped string and a number (null when not finite).
#ifndef MONSOON_CORE_JSON_TEXT_H_
#define MONSOON_CORE_JSON_TEXT_H_

#include <string>
#include <string_view>

namespace monsoon {

std::string JsonString(std::string_view s);
// %.10g, or null for NaN and infinities.
std::string JsonNumber(double v);

}  // namespace monsoon

#endif  // MONSOON_CORE_JSON_TEXT_H_

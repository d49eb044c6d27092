// README's configuration reference, generated from the schema (config_schema.h).
#ifndef MONSOON_CORE_CONFIG_CONFIG_REFERENCE_H_
#define MONSOON_CORE_CONFIG_CONFIG_REFERENCE_H_

#include <string>

namespace monsoon {

// README's configuration reference: a Markdown table with a row per field.
std::string ConfigReferenceMarkdown();

}  // namespace monsoon

#endif  // MONSOON_CORE_CONFIG_CONFIG_REFERENCE_H_

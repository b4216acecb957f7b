#include "term_text.h"

namespace stagemem {

std::string term_name(const Term& term) {
  return term.name;
}
std::string term_formula(const Term& term) {
  return term.formula;
}
std::string term_scaling(const Term& term) {
  return term.scaling;
}
std::string_view term_source(const Term& term, const Config&) {
  return term.source;
}

}  // namespace stagemem

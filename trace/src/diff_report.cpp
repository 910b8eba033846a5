// The diff's words: the category names, the --fail-on list, and the text and JSON reports of a
// DiffResult (docs/trace-tools.md).
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>

#include "json_null.hpp"
#include "shardscope/error.hpp"
#include "shardscope/names.hpp"
#include "shardscope/printable.hpp"
#include "shardscope/text.hpp"
#include "shardscope/trace/diff.hpp"

namespace shardscope::trace {

using nlohmann::json;

namespace {

std::string Trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string_view::npos ? std::string() : std::string(s.substr(b, e - b + 1));
}

double ParsePercent(const std::string& token, const std::string& value) {
  std::string v = value;
  if (!v.empty() && v.back() == '%') v.pop_back();
  size_t used = 0;
  double pct = 0;
  try {
    pct = std::stod(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (v.empty() || used != v.size() || !std::isfinite(pct) || pct < 0)
    throw InvalidInput("--fail-on: '" + token + "': expected time:N% with N a number >= 0, e.g. time:10%");
  return pct;
}

}  // namespace

constexpr Named<DiffCategory> kDiffCategories[] = {
    {DiffCategory::kPlan, "plan"},   {DiffCategory::kCollectives, "collectives"},
    {DiffCategory::kBytes, "bytes"}, {DiffCategory::kShapes, "shapes"},
    {DiffCategory::kCost, "cost"},   {DiffCategory::kOps, "ops"},
    {DiffCategory::kTime, "time"},
};

std::string_view DiffCategoryName(DiffCategory category) { return NameIn(kDiffCategories, category, "?"); }

DiffOptions ParseFailOn(std::string_view text) {
  DiffOptions options;
  options.fail_on.clear();
  std::string rest(text);
  if (Trim(rest).empty()) throw InvalidInput("--fail-on: empty list (expected e.g. plan,collectives,bytes)");
  size_t start = 0;
  while (start <= rest.size()) {
    size_t comma = rest.find(',', start);
    if (comma == std::string::npos) comma = rest.size();
    std::string token = Trim(std::string_view(rest).substr(start, comma - start));
    start = comma + 1;
    if (token.empty()) throw InvalidInput("--fail-on: empty entry in '" + rest + "'");
    if (token == "all") {
      for (DiffCategory c : {DiffCategory::kPlan, DiffCategory::kCollectives, DiffCategory::kBytes,
                             DiffCategory::kShapes, DiffCategory::kCost, DiffCategory::kOps})
        options.fail_on.insert(c);
      continue;
    }
    if (token == "time" || token.rfind("time:", 0) == 0) {
      options.fail_on.insert(DiffCategory::kTime);
      options.time_threshold_pct = token == "time" ? 10.0 : ParsePercent(token, token.substr(5));
      continue;
    }
    // "time" was taken above, so a name found here is one of the others.
    if (std::optional<DiffCategory> c = ParseIn(kDiffCategories, token)) {
      options.fail_on.insert(*c);
    } else {
      throw InvalidInput("--fail-on: unknown category '" + token +
                         "' (expected plan, collectives, bytes, shapes, cost, ops, time:N% or all)");
    }
  }
  return options;
}

std::string FormatDiffText(const DiffResult& result) {
  std::string out;
  std::set<std::string> failing_categories;
  int64_t failing = 0;
  for (const Difference& d : result.differences) {
    std::string category(DiffCategoryName(d.category));
    if (d.failing) {
      ++failing;
      failing_categories.insert(category);
    }
    std::string id;
    std::string kind = d.op ? "op " : "";
    if (d.baseline_id && d.candidate_id) {
      id = *d.baseline_id == *d.candidate_id
               ? "#" + std::to_string(*d.baseline_id)
               : "#" + std::to_string(*d.baseline_id) + "->#" + std::to_string(*d.candidate_id);
    } else if (d.baseline_id) {
      id = "-#" + std::to_string(*d.baseline_id);
    } else if (d.candidate_id) {
      id = "+#" + std::to_string(*d.candidate_id);
    }
    category.resize(std::max<size_t>(category.size(), 11), ' ');
    out += category + "  " + (id.empty() ? "" : kind + id + " ") + d.subject + ": " + d.what;
    if (d.what == "removed")
      out += " (baseline only: " + d.baseline + ")";
    else if (d.what == "added")
      out += " (candidate only: " + d.candidate + ")";
    else
      out += ": " + d.baseline + " -> " + d.candidate;
    out += "\n";
  }
  std::string compared;
  for (DiffCategory c : result.options.fail_on) {
    std::string name(DiffCategoryName(c));
    if (c == DiffCategory::kTime && result.options.time_threshold_pct)
      name += ">" + Fixed(*result.options.time_threshold_pct, 1) + "%";
    compared += (compared.empty() ? "" : ",") + name;
  }
  std::string counts = "aligned " + std::to_string(result.aligned) + " of " +
                       std::to_string(result.baseline_redistributes) + " baseline / " +
                       std::to_string(result.candidate_redistributes) + " candidate redistributes";
  if (result.baseline_ops > 0 || result.candidate_ops > 0) {
    counts += ", " + std::to_string(result.aligned_ops) + " of " + std::to_string(result.baseline_ops) +
              " baseline / " + std::to_string(result.candidate_ops) + " candidate ops";
  }
  if (result.differences.empty()) {
    out += "no differences; " + counts + " (fail on: " + compared + ")\n";
  } else {
    std::string cats;
    for (const std::string& c : failing_categories) cats += (cats.empty() ? "" : ", ") + c;
    out += std::to_string(result.differences.size()) + " difference" +
           (result.differences.size() == 1 ? "" : "s") + ", " +
           (failing > 0 ? std::to_string(failing) + " failing (" + cats + ")" : "none failing") + "; " +
           counts + " (fail on: " + compared + ")\n";
  }
  return out;
}

json DiffJson(const DiffResult& result) {
  json j;
  j["baseline_redistributes"] = result.baseline_redistributes;
  j["candidate_redistributes"] = result.candidate_redistributes;
  j["aligned"] = result.aligned;
  j["baseline_ops"] = result.baseline_ops;
  j["candidate_ops"] = result.candidate_ops;
  j["aligned_ops"] = result.aligned_ops;
  json fail_on = json::array();
  for (DiffCategory c : result.options.fail_on) fail_on.push_back(std::string(DiffCategoryName(c)));
  j["fail_on"] = fail_on;
  j["time_threshold_pct"] = detail::OrNull(result.options.time_threshold_pct);
  j["failed"] = result.Failed();
  json diffs = json::array();
  for (const Difference& d : result.differences) {
    json e;
    e["category"] = std::string(DiffCategoryName(d.category));
    e["op"] = d.op;
    e["baseline_id"] = detail::OrNull(d.baseline_id);
    e["candidate_id"] = detail::OrNull(d.candidate_id);
    e["subject"] = d.subject;
    e["what"] = d.what;
    e["baseline"] = d.baseline;
    e["candidate"] = d.candidate;
    e["failing"] = d.failing;
    diffs.push_back(std::move(e));
  }
  j["differences"] = diffs;
  return j;
}

}  // namespace shardscope::trace

// A minimal JSON writer for coalesce-explore's --json output: objects, arrays, numbers, strings.
// Enough for flat reports; it tracks commas so callers write members in order and never by hand.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace explore {

class json_writer {
 public:
  json_writer& begin_object(std::string_view key = {}) { return open(key, '{'); }
  json_writer& end_object() { return close('}'); }
  json_writer& begin_array(std::string_view key = {}) { return open(key, '['); }
  json_writer& end_array() { return close(']'); }

  json_writer& value(std::string_view key, std::string_view s) {
    this->key(key);
    quoted(s);
    return *this;
  }
  json_writer& value(std::string_view key, char const* s) { return value(key, std::string_view(s)); }
  json_writer& value(std::string_view key, bool b) {
    this->key(key);
    out_ += b ? "true" : "false";
    return *this;
  }
  json_writer& value(std::string_view key, double d) {
    this->key(key);
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.6g", d);
    out_ += buf;
    return *this;
  }
  template <class I>
  requires std::is_integral_v<I> json_writer& value(std::string_view key, I i) {
    this->key(key);
    out_ += std::to_string(i);
    return *this;
  }
  // An array element (no key).
  template <class V> json_writer& element(V v) { return value({}, v); }

  std::string const& str() const { return out_; }

 private:
  json_writer& open(std::string_view key, char c) {
    this->key(key);
    out_ += c;
    first_.push_back(true);
    return *this;
  }
  json_writer& close(char c) {
    first_.pop_back();
    out_ += c;
    return *this;
  }
  void key(std::string_view k) {
    if (!first_.empty()) {
      if (!first_.back()) out_ += ',';
      first_.back() = false;
    }
    if (!k.empty()) {
      quoted(k);
      out_ += ':';
    }
  }
  void quoted(std::string_view s) {
    out_ += '"';
    for (char c : s) {
      if (c == '"' || c == '\\') {
        out_ += '\\';
        out_ += c;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
        out_ += buf;
      } else {
        out_ += c;
      }
    }
    out_ += '"';
  }

  std::string out_;
  std::vector<bool> first_;
};

}  // namespace explore

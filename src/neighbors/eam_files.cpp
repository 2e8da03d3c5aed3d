// Reading DYNAMO setfl and funcfl files (coalesce/neighbors/eam_tables.hpp) and LAMMPS's splines
// through their tables.
#include <coalesce/neighbors/eam_tables.hpp>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <coalesce/core/error.hpp>

namespace coalesce {
namespace {

// A file's lines, then its numbers as a stream of words.
class eam_reader {
 public:
  eam_reader(std::string const& path, char const* format) : path_(path), format_(format) {
    std::ifstream in(path);
    if (!in) fail("cannot be read");
    std::stringstream all;
    all << in.rdbuf();
    text_ = all.str();
  }
  // The next line that holds anything, from its first word (blank lines and the rest of a line of
  // numbers skipped).
  std::string next_line() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
    return line();
  }
  // A line's leading numbers (Z, mass, ...: the rest, a lattice name or nothing, is not read).
  std::vector<double> leading_numbers(std::string const& text, std::size_t count, char const* what) {
    std::istringstream in(text);
    std::vector<double> out(count);
    for (double& x : out) {
      if (!(in >> x)) fail(std::string("has '") + text + "' where " + what + " should be");
    }
    return out;
  }
  std::string line() {
    if (at_ >= text_.size()) fail("ends inside its header");
    std::size_t const end = text_.find('\n', at_);
    std::string out = text_.substr(at_, end == std::string::npos ? std::string::npos : end - at_);
    at_ = end == std::string::npos ? text_.size() : end + 1;
    return out;
  }
  std::string word(char const* what) {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
    if (at_ >= text_.size()) fail(std::string("ends before ") + what);
    std::size_t const start = at_;
    while (at_ < text_.size() && !std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
    return text_.substr(start, at_ - start);
  }
  double number(char const* what) {
    std::string const w = word(what);
    char* end = nullptr;
    double const x = std::strtod(w.c_str(), &end);
    if (end == w.c_str() || *end != '\0') fail(std::string("has '") + w + "' where " + what + " should be");
    return x;
  }
  std::vector<double> numbers(std::size_t n, char const* what) {
    std::vector<double> out(n);
    for (double& x : out) x = number(what);
    return out;
  }
  // Nrho drho Nr dr cutoff
  void grid(eam_file& f) {
    double const rho_points = number("Nrho"), rho_step = number("drho");
    double const r_points = number("Nr"), r_step = number("dr");
    f.cutoff = number("the cutoff");
    if (!(rho_points >= 5) || !(r_points >= 5) || !(rho_step > 0) || !(r_step > 0) || !(f.cutoff > 0)) {
      fail("has a grid of " + std::to_string(rho_points) + " densities " + std::to_string(rho_step) + " apart and " +
           std::to_string(r_points) + " distances " + std::to_string(r_step) + " apart, cutoff " +
           std::to_string(f.cutoff) + "; each needs at least 5 points, positive steps and a positive cutoff");
    }
    f.rho_points = static_cast<std::size_t>(rho_points);
    f.rho_step = rho_step;
    f.r_points = static_cast<std::size_t>(r_points);
    f.r_step = r_step;
  }
  [[noreturn]] void fail(std::string const& what) const {
    detail::throw_error(std::string(format_) + ": the file " + path_ + " " + what);
  }

 private:
  std::string path_;
  char const* format_;
  std::string text_;
  std::size_t at_ = 0;
};

}  // namespace

eam_file read_setfl(std::string const& path) {
  eam_reader r(path, "read_setfl");
  for (int k = 0; k < 3; ++k) (void)r.line();  // comments
  eam_file f;
  {
    std::istringstream names(r.line());
    double count = 0;
    if (!(names >> count) || !(count >= 1) || count > 64) r.fail("does not give its element count on line 4");
    for (std::size_t e = 0; e < static_cast<std::size_t>(count); ++e) {
      std::string name;
      if (!(names >> name)) r.fail("names fewer elements on line 4 than its count");
      f.elements.push_back(name);
    }
  }
  r.grid(f);
  std::size_t const n = f.elements.size();
  for (std::size_t e = 0; e < n; ++e) {
    // atomic number, mass (LAMMPS reads these two; a lattice constant and name may follow)
    f.masses.push_back(r.leading_numbers(r.next_line(), 2, "an element's atomic number and mass")[1]);
    f.embedding.push_back(r.numbers(f.rho_points, "an embedding energy F(rho)"));
    f.density.push_back(r.numbers(f.r_points, "a density rho(r)"));
  }
  for (std::size_t p = 0; p < n * (n + 1) / 2; ++p) f.r_phi.push_back(r.numbers(f.r_points, "a pair term r phi(r)"));
  return f;
}

eam_file read_funcfl(std::string const& path) {
  eam_reader r(path, "read_funcfl");
  (void)r.line();  // comment
  eam_file f;
  f.elements.push_back("");
  f.masses.push_back(r.leading_numbers(r.line(), 2, "the atomic number and mass")[1]);
  r.grid(f);
  f.embedding.push_back(r.numbers(f.rho_points, "an embedding energy F(rho)"));
  std::vector<double> charge = r.numbers(f.r_points, "an effective charge Z(r)");
  f.density.push_back(r.numbers(f.r_points, "a density rho(r)"));
  for (double& z : charge) z = 27.2 * 0.529 * z * z;  // r phi = Z_i Z_j in Hartree Bohr, as LAMMPS
  f.r_phi.push_back(std::move(charge));
  return f;
}

namespace detail {

std::vector<double> eam_spline(std::vector<double> const& f, double step) {
  std::size_t const n = f.size();
  if (n < 5) throw_error("eam_tables: a table of " + std::to_string(n) + " points; at least 5");
  std::vector<double> c(7 * n, 0.0);
  auto at = [&](std::size_t m, int k) -> double& { return c[7 * m + static_cast<std::size_t>(k)]; };
  for (std::size_t m = 0; m < n; ++m) at(m, 6) = f[m];
  at(0, 5) = at(1, 6) - at(0, 6);
  at(1, 5) = 0.5 * (at(2, 6) - at(0, 6));
  at(n - 2, 5) = 0.5 * (at(n - 1, 6) - at(n - 3, 6));
  at(n - 1, 5) = at(n - 1, 6) - at(n - 2, 6);
  for (std::size_t m = 2; m + 2 < n; ++m) {
    at(m, 5) = ((at(m - 2, 6) - at(m + 2, 6)) + 8.0 * (at(m + 1, 6) - at(m - 1, 6))) / 12.0;
  }
  for (std::size_t m = 0; m + 1 < n; ++m) {
    at(m, 4) = 3.0 * (at(m + 1, 6) - at(m, 6)) - 2.0 * at(m, 5) - at(m + 1, 5);
    at(m, 3) = at(m, 5) + at(m + 1, 5) - 2.0 * (at(m + 1, 6) - at(m, 6));
  }
  for (std::size_t m = 0; m < n; ++m) {
    at(m, 2) = at(m, 5) / step;
    at(m, 1) = 2.0 * at(m, 4) / step;
    at(m, 0) = 3.0 * at(m, 3) / step;
  }
  return c;
}

}  // namespace detail
}  // namespace coalesce

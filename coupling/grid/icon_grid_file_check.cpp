// SPDX-License-Identifier: BSD-3-Clause
// The consistency checks of an ICON grid file's tables: topology first (indices, edges, rings),
// then geometry (orientation signs against the positions, lengths, areas), then ICON's layout.
#include "coupling/grid/icon_grid_file_check.hpp"

#include <netcdf.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "coupling/error.hpp"
#include "coupling/grid/icon_grid_layout.hpp"
#include "coupling/grid/spherical.hpp"
#include "coupling/io/nc_file.hpp"

namespace finecast::coupling {
namespace {

using sphere::add;
using sphere::sub;
using sphere::Vec3;

constexpr int kMaxRing = 8;  // cells around a vertex this checker handles (ICON's triangular grids: 6)

double dist(const Vec3& a, const Vec3& b) {
  const Vec3 d = sub(a, b);
  return std::sqrt(sphere::dot(d, d));
}
int sign(double x) { return x < 0 ? -1 : 1; }

/// Reads whole variables and records problems instead of throwing.
class Reader {
 public:
  Reader(const std::string& path, IconGridFileCheck& out) : file_(path, "ICON grid file"), path_(path), out_(out) {}

  void problem(const std::string& what) {
    ++out_.n_problems;
    if (out_.problems.size() < 20) out_.problems.push_back(what);
  }
  int64_t dim(const char* name) {
    int id = -1;
    size_t len = 0;
    if (nc_inq_dimid(file_.id, name, &id) != NC_NOERR || nc_inq_dimlen(file_.id, id, &len) != NC_NOERR) {
      problem(std::string("dimension '") + name + "' missing (ICON's read_pre_patch needs it)");
      return -1;
    }
    return static_cast<int64_t>(len);
  }
  /// Whether `v` exists with exactly its dimensions, by name.
  bool has(const IconGridVariable& v) {
    int id = -1, ndims = 0;
    if (nc_inq_varid(file_.id, v.name, &id) != NC_NOERR) {
      problem(std::string("variable '") + v.name + "' missing");
      return false;
    }
    int dims[NC_MAX_VAR_DIMS];
    nc_inq_varndims(file_.id, id, &ndims);
    nc_inq_vardimid(file_.id, id, dims);
    std::string got, want;
    for (int i = 0; i < ndims; ++i) {
      char name[NC_MAX_NAME + 1];
      nc_inq_dimname(file_.id, dims[i], name);
      got += (i ? "," : "") + std::string(name);
    }
    for (size_t i = 0; i < v.dims.size(); ++i) want += (i ? "," : "") + std::string(v.dims[i]);
    if (got != want) {
      problem(std::string("variable '") + v.name + "' has dimensions (" + got + "), expected (" + want + ")");
      return false;
    }
    return true;
  }
  std::vector<double> doubles(const char* name) {
    const int id = var(name);
    std::vector<double> v(size(id));
    if (id >= 0) CHECK_NC(nc_get_var_double(file_.id, id, v.data()), ctx(name));
    return v;
  }
  std::vector<int32_t> ints(const char* name) {
    const int id = var(name);
    std::vector<int32_t> v(size(id));
    if (id >= 0) CHECK_NC(nc_get_var_int(file_.id, id, v.data()), ctx(name));
    return v;
  }
  bool int_attribute(const char* name, int& value) {
    nc_type type;
    size_t len = 0;
    return nc_inq_att(file_.id, NC_GLOBAL, name, &type, &len) == NC_NOERR && len == 1 && type != NC_CHAR &&
           nc_get_att_int(file_.id, NC_GLOBAL, name, &value) == NC_NOERR;
  }
  bool double_attribute(const char* name, double& value) {
    nc_type type;
    size_t len = 0;
    return nc_inq_att(file_.id, NC_GLOBAL, name, &type, &len) == NC_NOERR && len == 1 && type != NC_CHAR &&
           nc_get_att_double(file_.id, NC_GLOBAL, name, &value) == NC_NOERR;
  }
  bool text_attribute(const char* name, std::string& value) {
    nc_type type;
    size_t len = 0;
    if (nc_inq_att(file_.id, NC_GLOBAL, name, &type, &len) != NC_NOERR || type != NC_CHAR) return false;
    value.assign(len, '\0');
    return nc_get_att_text(file_.id, NC_GLOBAL, name, value.data()) == NC_NOERR;
  }

 private:
  int var(const char* name) {
    int id = -1;
    return nc_inq_varid(file_.id, name, &id) == NC_NOERR ? id : -1;
  }
  size_t size(int id) {
    if (id < 0) return 0;
    int ndims = 0, dims[NC_MAX_VAR_DIMS];
    nc_inq_varndims(file_.id, id, &ndims);
    nc_inq_vardimid(file_.id, id, dims);
    size_t n = 1;
    for (int i = 0; i < ndims; ++i) {
      size_t len = 0;
      nc_inq_dimlen(file_.id, dims[i], &len);
      n *= len;
    }
    return n;
  }
  std::string ctx(const char* name) const { return "ICON grid file '" + path_ + "', variable '" + name + "'"; }

  NcReadFile file_;
  std::string path_;
  IconGridFileCheck& out_;
};

std::string at(const char* var, int64_t i) { return std::string(var) + " at " + std::to_string(i + 1); }

std::vector<Vec3> positions(const std::vector<double>& lon, const std::vector<double>& lat) {
  std::vector<Vec3> p(lon.size());
  for (size_t i = 0; i < p.size(); ++i) p[i] = sphere::to_xyz(lon[i], lat[i]);
  return p;
}

/// The checks, in the order a failure makes the next ones meaningless.
class Checker {
 public:
  Checker(Reader& r, IconGridFileCheck& out) : r_(r), out_(out) {}

  void run() {
    if (!layout()) return;
    if (!topology()) return;
    rings();
    geometry();
    index_lists();
  }

 private:
  bool layout() {
    nc_ = r_.dim("cell");
    ne_ = r_.dim("edge");
    nv_ = r_.dim("vertex");
    const int64_t corners = r_.dim("nv"), ring = r_.dim("ne"), two = r_.dim("nc");
    r_.dim("max_chdom");
    if (nc_ < 0 || ne_ < 0 || nv_ < 0 || corners < 0 || ring < 0 || two < 0) return false;
    ring_ = static_cast<int>(ring);
    if (ring_ > kMaxRing) {
      r_.problem("dimension 'ne' is " + std::to_string(ring) + ", expected at most " + std::to_string(kMaxRing));
      return false;
    }
    if (corners != 3) r_.problem("dimension 'nv' is " + std::to_string(corners) + ", expected 3 (triangles)");
    if (two != 2) r_.problem("dimension 'nc' is " + std::to_string(two) + ", expected 2");
    for (const IconIndexLists* l : {&kIconCellLists, &kIconEdgeLists, &kIconVertLists}) {
      const int64_t len = r_.dim(l->list_dim);
      if (len >= 0 && len != l->size())
        r_.problem(std::string("dimension '") + l->list_dim + "' is " + std::to_string(len) + ", expected " +
                   std::to_string(l->size()));
    }
    out_.n_cells = nc_;
    out_.n_edges = ne_;
    out_.n_vertices = nv_;
    bool all = true;
    for (const IconGridVariable& v : icon_grid_file_variables()) all = r_.has(v) && all;
    // A limited-area grid: an edge with one adjacent cell (the second 0).
    if (all) {
      const std::vector<int32_t> adjacent = r_.ints("adjacent_cell_of_edge");
      for (int64_t e = 0; e < ne_ && static_cast<size_t>(ne_ + e) < adjacent.size(); ++e)
        if (adjacent[ne_ + e] == 0) lam_ = true;
    }
    out_.limited_area = lam_;
    int root = 0, level = 0;
    const bool have_root = r_.int_attribute("grid_root", root), have_level = r_.int_attribute("grid_level", level);
    if (!have_root) r_.problem("global attribute 'grid_root' missing (ICON stops without it)");
    if (!have_level) r_.problem("global attribute 'grid_level' missing (ICON stops without it)");
    if (have_root && have_level && root > 0 && level >= 0 && level < 16) {
      const int64_t whole = 20LL * root * root * (int64_t{1} << (2 * level));
      if (!lam_ && nc_ != whole)
        r_.problem("dimension 'cell' is " + std::to_string(nc_) +
                   ", expected 20 * grid_root^2 * 4^grid_level = " + std::to_string(whole) + " for a global grid");
      if (lam_ && nc_ >= whole)
        r_.problem("dimension 'cell' is " + std::to_string(nc_) + ", expected fewer than the " + std::to_string(whole) +
                   " cells of the whole sphere for a limited-area grid");
    }
    std::string uuid;
    if (r_.text_attribute("uuidOfHGrid", uuid) && !well_formed_uuid(uuid))
      r_.problem("global attribute 'uuidOfHGrid' is '" + uuid + "', expected 36 characters 8-4-4-4-12 hex");
    if (!lam_ && nv_ - ne_ + nc_ != 2)
      r_.problem("V - E + F = " + std::to_string(nv_ - ne_ + nc_) + ", expected 2 (a closed sphere)");
    if (lam_ && nv_ - ne_ + nc_ != 1)
      r_.problem("V - E + F = " + std::to_string(nv_ - ne_ + nc_) +
                 ", expected 1 for a limited-area grid (one piece without holes)");
    return all && out_.ok();
  }

  static bool well_formed_uuid(const std::string& s) {
    if (s.size() != 36) return false;
    for (size_t i = 0; i < s.size(); ++i) {
      const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
      if (dash != (s[i] == '-') || (!dash && !std::isxdigit(static_cast<unsigned char>(s[i])))) return false;
    }
    return true;
  }

  /// Index tables 1-based in range, converted to 0-based.
  std::vector<int32_t> table(const char* name, int64_t range, bool zero_allowed) {
    std::vector<int32_t> v = r_.ints(name);
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i] == 0 && zero_allowed) {
        v[i] = -1;
        continue;
      }
      if (v[i] < 1 || v[i] > range) {
        r_.problem(std::string(name) + ": value " + std::to_string(v[i]) + " at flat index " + std::to_string(i) +
                   ", expected 1.." + std::to_string(range));
        v[i] = -1;
        continue;
      }
      --v[i];
    }
    return v;
  }

  bool topology() {
    const int64_t before = out_.n_problems;
    voc_ = table("vertex_of_cell", nv_, false);
    eoc_ = table("edge_of_cell", ne_, false);
    const std::vector<int32_t> nbr = table("neighbor_cell_index", nc_, lam_);
    const std::vector<int32_t> orient = r_.ints("orientation_of_normal");
    ec_ = table("adjacent_cell_of_edge", nc_, lam_);
    ev_ = table("edge_vertices", nv_, false);
    if (out_.n_problems > before) return false;
    std::vector<int> uses(ne_, 0);
    for (int64_t c = 0; c < nc_; ++c)
      for (int k = 0; k < 3; ++k) {
        const int32_t e = eoc(c, k), a = voc(c, k), b = voc(c, (k + 1) % 3);
        ++uses[e];
        const bool first = ec(e, 0) == c, second = ec(e, 1) == c;
        if (!first && !second) {
          r_.problem(at("edge_of_cell", c) + ": edge " + std::to_string(e + 1) + " does not name the cell adjacent");
          continue;
        }
        const int32_t other = first ? ec(e, 1) : ec(e, 0);
        if (nbr[k * nc_ + c] != other)
          r_.problem(at("neighbor_cell_index", c) + " slot " + std::to_string(k + 1) + ": " +
                     std::to_string(nbr[k * nc_ + c] + 1) + ", expected " + std::to_string(other + 1) +
                     " (the other cell of its edge " + std::to_string(e + 1) + ")");
        if (!((ev(e, 0) == a && ev(e, 1) == b) || (ev(e, 0) == b && ev(e, 1) == a)))
          r_.problem(at("edge_of_cell", c) + " slot " + std::to_string(k + 1) + ": edge " + std::to_string(e + 1) +
                     " does not join the cell's vertices " + std::to_string(k + 1) + " and " +
                     std::to_string((k + 1) % 3 + 1));
        if (orient[k * nc_ + c] != (first ? 1 : -1))
          r_.problem(at("orientation_of_normal", c) + " slot " + std::to_string(k + 1) + ": " +
                     std::to_string(orient[k * nc_ + c]) + ", expected " + (first ? "+1" : "-1") +
                     " (the cell is adjacent cell " + (first ? "1" : "2") + " of edge " + std::to_string(e + 1) + ")");
      }
    for (int64_t e = 0; e < ne_; ++e) {
      const bool open = ec(e, 1) < 0;  // a lateral-boundary edge (limited area)
      if (ec(e, 0) < 0)
        r_.problem(at("adjacent_cell_of_edge", e) + ": adjacent cell 1 is 0 (only cell 2 may be missing)");
      if (uses[e] != (open ? 1 : 2))
        r_.problem(at("edge_of_cell", e) + ": edge named by " + std::to_string(uses[e]) + " cells, expected " +
                   (open ? "1 (its one adjacent cell)" : "2"));
      if (!open && ec(e, 0) == ec(e, 1)) r_.problem(at("adjacent_cell_of_edge", e) + ": both cells are the same");
      if (ev(e, 0) == ev(e, 1)) r_.problem(at("edge_vertices", e) + ": both vertices are the same");
    }
    return out_.n_problems == before;
  }

  /// Vertex rings: closed, or on a lateral boundary an open fan of k cells with k + 1 edges (edge
  /// i after cell i, the last after cell k - 1; slot k the boundary edge before cell 0).
  void rings() {
    const std::vector<int32_t> cells = table("cells_of_vertex", nc_, true);
    const std::vector<int32_t> edges = table("edges_of_vertex", ne_, true);
    const std::vector<int32_t> verts = table("vertices_of_vertex", nv_, true);
    const std::vector<int32_t> orient = r_.ints("edge_orientation");
    so_ = r_.ints("edge_system_orientation");
    std::vector<int> incident(nv_, 0);
    for (int64_t c = 0; c < nc_; ++c)
      for (int k = 0; k < 3; ++k) ++incident[voc(c, k)];
    open_.assign(nv_, 0);
    for (int64_t e = 0; e < ne_; ++e)
      if (ec(e, 1) < 0) open_[ev(e, 0)] = open_[ev(e, 1)] = 1;
    ring_edges_.assign(nv_, {});
    ring_orientation_.assign(nv_, {});
    ring_cells_.assign(nv_, {});
    for (auto& r : ring_cells_) r.fill(-1);
    degree_.assign(nv_, 0);
    for (int64_t v = 0; v < nv_; ++v) {
      auto slot = [&](const std::vector<int32_t>& t, int i) { return t[i * nv_ + v]; };
      int deg = 0;
      while (deg < ring_ && slot(cells, deg) >= 0) ++deg;
      const int n_edges = open_[v] ? deg + 1 : deg;
      degree_[v] = deg;
      if (deg == 5 && !open_[v]) ++out_.pentagons;
      for (int i = deg; i < ring_; ++i)
        if (slot(cells, i) >= 0 ||
            (i >= n_edges && (slot(edges, i) >= 0 || slot(verts, i) >= 0 || orient[i * nv_ + v] != 0)))
          r_.problem(at("cells_of_vertex", v) + ": an unused slot before slot " + std::to_string(i + 1) +
                     " or a non-zero entry after it (unused slots come last and are 0 in every ring table)");
      if (deg != incident[v] || n_edges > ring_) {
        degree_[v] = 0;
        r_.problem(at("cells_of_vertex", v) + ": " + std::to_string(deg) + " cells, but " +
                   std::to_string(incident[v]) + " cells name the vertex");
        continue;
      }
      for (int i = 0; i < n_edges; ++i) {
        // The cells the edge of slot i joins: i and i + 1, -1 past either end of an open fan.
        const int32_t c = i < deg ? slot(cells, i) : -1;
        const int32_t c_next = open_[v] ? (i + 1 < deg ? slot(cells, i + 1)
                                           : i == deg  ? slot(cells, 0)
                                                       : -1)
                                        : slot(cells, (i + 1) % deg);
        const int32_t e = slot(edges, i);
        if (i < deg) ring_cells_[v][i] = c;
        ring_edges_[v][i] = e;
        ring_orientation_[v][i] = orient[i * nv_ + v];
        if ((i < deg && c < 0) || e < 0 || slot(verts, i) < 0) {
          r_.problem(at("cells_of_vertex", v) + ": slot " + std::to_string(i + 1) + " empty in a ring table");
          continue;
        }
        if (c >= 0 && voc(c, 0) != v && voc(c, 1) != v && voc(c, 2) != v)
          r_.problem(at("cells_of_vertex", v) + ": cell " + std::to_string(c + 1) + " does not have the vertex");
        const bool joins = (ec(e, 0) == c && ec(e, 1) == c_next) || (ec(e, 1) == c && ec(e, 0) == c_next);
        if (!joins)
          r_.problem(at("edges_of_vertex", v) + " slot " + std::to_string(i + 1) + ": edge " + std::to_string(e + 1) +
                     " does not join cells " + std::to_string(c + 1) + " and " + std::to_string(c_next + 1) +
                     " of the ring (0: none)");
        const bool first = ev(e, 0) == v;
        if (!first && ev(e, 1) != v) {
          r_.problem(at("edges_of_vertex", v) + ": edge " + std::to_string(e + 1) + " does not end at the vertex");
          continue;
        }
        if (slot(verts, i) != (first ? ev(e, 1) : ev(e, 0)))
          r_.problem(at("vertices_of_vertex", v) + " slot " + std::to_string(i + 1) + ": not the other end of edge " +
                     std::to_string(e + 1));
        const int want = first ? so_[e] : -so_[e];
        if (orient[i * nv_ + v] != want)
          r_.problem(at("edge_orientation", v) + " slot " + std::to_string(i + 1) + ": " +
                     std::to_string(orient[i * nv_ + v]) + ", expected " + std::to_string(want) +
                     " (edge_system_orientation, negated where the vertex is the edge's second)");
      }
    }
  }

  void geometry() {
    double radius = sphere::kEarthRadius;
    r_.double_attribute("sphere_radius", radius);
    const std::vector<Vec3> vx = positions(r_.doubles("longitude_vertices"), r_.doubles("latitude_vertices"));
    const std::vector<double> clon = r_.doubles("lon_cell_centre"), clat = r_.doubles("lat_cell_centre");
    const std::vector<double> elon = r_.doubles("lon_edge_centre"), elat = r_.doubles("lat_edge_centre");
    const std::vector<Vec3> cx = positions(clon, clat), ex = positions(elon, elat);
    same_positions("vlon/vlat", vx, positions(r_.doubles("vlon"), r_.doubles("vlat")));
    same_positions("clon/clat", cx, positions(r_.doubles("clon"), r_.doubles("clat")));
    same_positions("elon/elat", ex, positions(r_.doubles("elon"), r_.doubles("elat")));
    same_positions("cartesian_*_vertices", vx,
                   cartesian("cartesian_x_vertices", "cartesian_y_vertices", "cartesian_z_vertices"));
    same_positions(
        "cell_circumcenter_cartesian_*", cx,
        cartesian("cell_circumcenter_cartesian_x", "cell_circumcenter_cartesian_y", "cell_circumcenter_cartesian_z"));
    same_positions("edge_middle_cartesian_*", ex,
                   cartesian("edge_middle_cartesian_x", "edge_middle_cartesian_y", "edge_middle_cartesian_z"));

    const std::vector<double> area = r_.doubles("cell_area_p");
    double total = 0;
    for (int64_t c = 0; c < nc_; ++c) {
      const Vec3 &a = vx[voc(c, 0)], &b = vx[voc(c, 1)], &d = vx[voc(c, 2)];
      if (sphere::dot(sphere::cross(sub(b, a), sub(d, a)), add(add(a, b), d)) <= 0)
        r_.problem(at("vertex_of_cell", c) + ": vertices clockwise seen from outside, expected counter-clockwise");
      const double ra = dist(cx[c], a), rb = dist(cx[c], b), rd = dist(cx[c], d);
      if (std::fabs(ra - rb) > 1e-9 * ra || std::fabs(ra - rd) > 1e-9 * ra)
        r_.problem(at("lon_cell_centre", c) + ": not the circumcentre of the cell's vertices");
      if (!(area[c] > 0)) r_.problem(at("cell_area_p", c) + ": area " + std::to_string(area[c]) + ", expected > 0");
      total += area[c];
    }
    const double sphere_area = 4 * sphere::kPi * radius * radius;
    out_.area_error = std::fabs(total / sphere_area - 1);
    out_.area_fraction = total / sphere_area;
    if (!lam_ && out_.area_error > 1e-10)
      r_.problem("cell_area_p sums to " + std::to_string(total) + " m2, expected 4 pi R^2 = " +
                 std::to_string(sphere_area) + " (relative error " + std::to_string(out_.area_error) + ")");

    const std::vector<double> zn = r_.doubles("zonal_normal_primal_edge"),
                              mn = r_.doubles("meridional_normal_primal_edge");
    const std::vector<double> zd = r_.doubles("zonal_normal_dual_edge"), md = r_.doubles("meridional_normal_dual_edge");
    const std::vector<Vec3> pn =
        cartesian("edge_primal_normal_cartesian_x", "edge_primal_normal_cartesian_y", "edge_primal_normal_cartesian_z");
    const std::vector<Vec3> dn =
        cartesian("edge_dual_normal_cartesian_x", "edge_dual_normal_cartesian_y", "edge_dual_normal_cartesian_z");
    const std::vector<double> length = r_.doubles("edge_length"), dual_length = r_.doubles("dual_edge_length");
    const std::vector<double> to_vert = r_.doubles("edge_vert_distance"), to_cell = r_.doubles("edge_cell_distance");
    normals_.resize(ne_);
    for (int64_t e = 0; e < ne_; ++e) {
      const Vec3 &v1 = vx[ev(e, 0)], &v2 = vx[ev(e, 1)], &c1 = cx[ec(e, 0)], &m = ex[e];
      // A lateral-boundary edge: cell 1's mirror image across the edge stands for cell 2.
      const Vec3 c2 = ec(e, 1) >= 0 ? cx[ec(e, 1)] : sphere::mirrored(c1, m);
      const Vec3 east = sphere::east(elon[e]), north = sphere::north(elon[e], elat[e]);
      Vec3 n{}, t{};
      for (int d = 0; d < 3; ++d) {
        n[d] = zn[e] * east[d] + mn[e] * north[d];
        t[d] = zd[e] * east[d] + md[e] * north[d];
      }
      normals_[e] = n;
      const double edge = dist(v1, v2);
      if (std::fabs(sphere::dot(n, n) - 1) > 1e-9 || std::fabs(sphere::dot(n, sub(v2, v1))) > 1e-9 * edge)
        r_.problem(at("zonal_normal_primal_edge", e) + ": the primal normal is no unit vector across the edge");
      if (sphere::dot(n, sub(c2, c1)) <= 0)
        r_.problem(at("zonal_normal_primal_edge", e) +
                   ": the normal points from adjacent cell 2 to cell 1, expected from cell 1 to cell 2");
      if (std::fabs(zd[e] - mn[e]) > 1e-12 || std::fabs(md[e] + zn[e]) > 1e-12)
        r_.problem(at("zonal_normal_dual_edge", e) +
                   ": the dual normal is not (meridional, -zonal) of the primal normal (ICON: n x r)");
      if (dist(pn[e], n) > 1e-9 || dist(dn[e], t) > 1e-9)
        r_.problem(at("edge_primal_normal_cartesian_x", e) +
                   ": Cartesian normals differ from the zonal/meridional ones");
      const int so = sign(sphere::dot(sphere::cross(sub(v2, v1), sub(c2, c1)), m));
      if (so_[e] != so)
        r_.problem(at("edge_system_orientation", e) + ": " + std::to_string(so_[e]) + ", expected " +
                   std::to_string(so) + " (sign of ((v2 - v1) x (c2 - c1)) . edge centre)");
      const double arc = sphere::arc_length(v1, v2) * radius;
      const double dual = (sphere::arc_length(m, c1) + sphere::arc_length(m, c2)) * radius;
      if (std::fabs(length[e] - arc) > 1e-9 * arc)
        r_.problem(at("edge_length", e) + ": " + std::to_string(length[e]) + " m, expected " + std::to_string(arc));
      if (std::fabs(dual_length[e] - dual) > 1e-9 * dual)
        r_.problem(at("dual_edge_length", e) + ": " + std::to_string(dual_length[e]) + " m, expected " +
                   std::to_string(dual));
      if (std::fabs(to_vert[e] + to_vert[ne_ + e] - length[e]) > 1e-9 * arc)
        r_.problem(at("edge_vert_distance", e) + ": does not sum to edge_length");
      if (std::fabs(to_cell[e] + to_cell[ne_ + e] - dual_length[e]) > 1e-9 * dual)
        r_.problem(at("edge_cell_distance", e) + ": does not sum to dual_edge_length");
    }

    const std::vector<double> dual_area = r_.doubles("dual_area_p");
    double dual_total = 0;
    for (int64_t v = 0; v < nv_; ++v) {
      const int deg = degree_[v];
      const int n_edges = deg > 0 && open_[v] ? deg + 1 : deg;
      for (int i = 0; i < n_edges; ++i) {
        const int32_t e = ring_edges_[v][i];
        if (e < 0) continue;
        const int next = open_[v] ? i + 1 : (i + 1) % deg;
        if (i < deg && next < deg && ring_cells_[v][i] >= 0 && ring_cells_[v][next] >= 0) {
          const Vec3 &c = cx[ring_cells_[v][i]], &c_next = cx[ring_cells_[v][next]];
          if (sphere::dot(sphere::cross(sub(c, vx[v]), sub(c_next, vx[v])), vx[v]) <= 0)
            r_.problem(at("cells_of_vertex", v) + ": cells " + std::to_string(i + 1) + " and " +
                       std::to_string(next + 1) + " turn clockwise about the vertex, expected counter-clockwise");
        }
        const int turn = sign(sphere::dot(normals_[e], sphere::cross(vx[v], ex[e])));
        if (ring_orientation_[v][i] != turn)
          r_.problem(at("edge_orientation", v) + " slot " + std::to_string(i + 1) + ": " +
                     std::to_string(ring_orientation_[v][i]) + ", but the normal of edge " + std::to_string(e + 1) +
                     " turns " + (turn > 0 ? "counter-clockwise" : "clockwise") + " about the vertex");
      }
      if (!(dual_area[v] > 0)) r_.problem(at("dual_area_p", v) + ": area " + std::to_string(dual_area[v]));
      dual_total += dual_area[v];
    }
    out_.dual_area_error = std::fabs(dual_total / sphere_area - 1);
    if (!lam_ && out_.dual_area_error > 1e-10)
      r_.problem("dual_area_p sums to " + std::to_string(dual_total) + " m2, expected 4 pi R^2 = " +
                 std::to_string(sphere_area) + " (relative error " + std::to_string(out_.dual_area_error) + ")");
  }

  /// ICON's index lists of a domain without nests: entities sorted by refinement row (lateral
  /// boundary rows 1..max_rl first), the lists spanning them (icon_index_lists). Files with nests
  /// (negative flags) are not checked.
  void index_lists() {
    const IconIndexLists* lists[3] = {&kIconCellLists, &kIconEdgeLists, &kIconVertLists};
    for (int i = 0; i < 3; ++i) {
      const std::string s = lists[i]->suffix;
      const std::vector<int32_t> flags = r_.ints(("refin_" + s + "_ctrl").c_str());
      if (std::any_of(flags.begin(), flags.end(), [](int32_t f) { return f < 0; })) continue;  // nests: not checked
      if (!lam_ && std::any_of(flags.begin(), flags.end(), [](int32_t f) { return f != 0; }))
        r_.problem("refin_" + s + "_ctrl: rows set on a global grid (expected 0 without a lateral boundary)");
      std::vector<int32_t> start, end;
      if (!icon_index_lists(*lists[i], flags, start, end))
        r_.problem("refin_" + s + "_ctrl: the entities are not sorted by refinement row (rows 1.." +
                   std::to_string(lists[i]->max_rl) + " first, in order), which ICON's index lists need");
      else if (r_.ints(("start_idx_" + s).c_str()) != start || r_.ints(("end_idx_" + s).c_str()) != end)
        r_.problem("start_idx_" + s + "/end_idx_" + s + ": not the lists of the refinement rows (levels 1.." +
                   std::to_string(lists[i]->max_rl) + " the entities of each row, level 0 the rest up to the last, " +
                   "levels below 0 empty after it)");
    }
  }

  void same_positions(const char* what, const std::vector<Vec3>& a, const std::vector<Vec3>& b) {
    for (size_t i = 0; i < a.size() && i < b.size(); ++i)
      if (dist(a[i], b[i]) > 1e-12) {
        r_.problem(std::string(what) + " at " + std::to_string(i + 1) + ": differs from the position ICON reads");
        return;
      }
  }
  std::vector<Vec3> cartesian(const char* x, const char* y, const char* z) {
    const std::vector<double> a = r_.doubles(x), b = r_.doubles(y), c = r_.doubles(z);
    std::vector<Vec3> p(a.size());
    for (size_t i = 0; i < p.size(); ++i) p[i] = {a[i], b[i], c[i]};
    return p;
  }

  int32_t voc(int64_t c, int k) const { return voc_[k * nc_ + c]; }
  int32_t eoc(int64_t c, int k) const { return eoc_[k * nc_ + c]; }
  int32_t ec(int64_t e, int s) const { return ec_[s * ne_ + e]; }
  int32_t ev(int64_t e, int s) const { return ev_[s * ne_ + e]; }

  Reader& r_;
  IconGridFileCheck& out_;
  int64_t nc_ = 0, ne_ = 0, nv_ = 0;
  int ring_ = 6;
  bool lam_ = false;           // a limited-area grid (some edge has one adjacent cell)
  std::vector<uint8_t> open_;  // vertices on the lateral boundary
  std::vector<int32_t> voc_, eoc_, ec_, ev_, so_;
  std::vector<int> degree_;
  std::vector<std::array<int32_t, kMaxRing>> ring_cells_, ring_edges_, ring_orientation_;
  std::vector<Vec3> normals_;
};

}  // namespace

const std::vector<IconGridVariable>& icon_grid_file_variables() {
  static const std::vector<IconGridVariable> vars = {
      // read_pre_patch
      {"neighbor_cell_index", {"nv", "cell"}},
      {"edge_of_cell", {"nv", "cell"}},
      {"vertex_of_cell", {"nv", "cell"}},
      {"lat_cell_centre", {"cell"}},
      {"lon_cell_centre", {"cell"}},
      {"latitude_vertices", {"vertex"}},
      {"longitude_vertices", {"vertex"}},
      {"parent_cell_index", {"cell"}},
      {"parent_edge_index", {"edge"}},
      {"refin_c_ctrl", {"cell"}},
      {"refin_e_ctrl", {"edge"}},
      {"refin_v_ctrl", {"vertex"}},
      {"start_idx_c", {"max_chdom", "cell_grf"}},
      {"end_idx_c", {"max_chdom", "cell_grf"}},
      {"start_idx_e", {"max_chdom", "edge_grf"}},
      {"end_idx_e", {"max_chdom", "edge_grf"}},
      {"start_idx_v", {"max_chdom", "vert_grf"}},
      {"end_idx_v", {"max_chdom", "vert_grf"}},
      {"cells_of_vertex", {"ne", "vertex"}},
      {"adjacent_cell_of_edge", {"nc", "edge"}},
      // read_remaining_patch
      {"orientation_of_normal", {"nv", "cell"}},
      {"cell_area_p", {"cell"}},
      {"edge_vertices", {"nc", "edge"}},
      {"edge_system_orientation", {"edge"}},
      {"lon_edge_centre", {"edge"}},
      {"lat_edge_centre", {"edge"}},
      {"zonal_normal_primal_edge", {"edge"}},
      {"meridional_normal_primal_edge", {"edge"}},
      {"zonal_normal_dual_edge", {"edge"}},
      {"meridional_normal_dual_edge", {"edge"}},
      {"edge_length", {"edge"}},
      {"dual_edge_length", {"edge"}},
      {"edge_vert_distance", {"nc", "edge"}},
      {"edge_cell_distance", {"nc", "edge"}},
      {"vertices_of_vertex", {"ne", "vertex"}},
      {"edges_of_vertex", {"ne", "vertex"}},
      {"edge_orientation", {"ne", "vertex"}},
      {"dual_area_p", {"vertex"}},
      // copy_grid_info (output coordinates and bounds)
      {"clon", {"cell"}},
      {"clat", {"cell"}},
      {"clon_vertices", {"cell", "nv"}},
      {"clat_vertices", {"cell", "nv"}},
      {"elon", {"edge"}},
      {"elat", {"edge"}},
      {"elon_vertices", {"edge", "no"}},
      {"elat_vertices", {"edge", "no"}},
      {"vlon", {"vertex"}},
      {"vlat", {"vertex"}},
      {"vlon_vertices", {"vertex", "ne"}},
      {"vlat_vertices", {"vertex", "ne"}},
      // read_cartesian_positions (ICON computes them from the positions above when absent)
      {"cell_circumcenter_cartesian_x", {"cell"}},
      {"cell_circumcenter_cartesian_y", {"cell"}},
      {"cell_circumcenter_cartesian_z", {"cell"}},
      {"edge_middle_cartesian_x", {"edge"}},
      {"edge_middle_cartesian_y", {"edge"}},
      {"edge_middle_cartesian_z", {"edge"}},
      {"edge_dual_middle_cartesian_x", {"edge"}},
      {"edge_dual_middle_cartesian_y", {"edge"}},
      {"edge_dual_middle_cartesian_z", {"edge"}},
      {"edge_primal_normal_cartesian_x", {"edge"}},
      {"edge_primal_normal_cartesian_y", {"edge"}},
      {"edge_primal_normal_cartesian_z", {"edge"}},
      {"edge_dual_normal_cartesian_x", {"edge"}},
      {"edge_dual_normal_cartesian_y", {"edge"}},
      {"edge_dual_normal_cartesian_z", {"edge"}},
      {"cartesian_x_vertices", {"vertex"}},
      {"cartesian_y_vertices", {"vertex"}},
      {"cartesian_z_vertices", {"vertex"}},
  };
  return vars;
}

IconGridFileCheck check_icon_grid_file(const std::string& path) {
  IconGridFileCheck out;
  Reader reader(path, out);
  Checker(reader, out).run();
  return out;
}

}  // namespace finecast::coupling

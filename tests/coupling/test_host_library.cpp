// SPDX-License-Identifier: BSD-3-Clause
// finecast's ComIn host library: phases, descriptive data layout, strings, plugin loading,
// callback order and variable exchange with small C test plugins.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "comin.h"
#include "common/leak_check.hpp"
#include "host/comin/host.hpp"

namespace ch = finecast::host::comin;

namespace {

const std::string kLib = std::string(FINECAST_BINARY_DIR) + "/lib/";

void ensure_mpi() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    const finecast::IgnoreLeaksHere open_mpi_init;
    MPI_Init(nullptr, nullptr);
  }
}

ch::SimulationInterval interval() {
  return {"1979-01-01T00:00:00", "1979-01-11T00:00:00", "1979-01-01T00:00:00", "1979-01-02T00:00:00"};
}

// 10 local cells with nproma 4 (blocks of 4, 4, 2): cell j has global index 2j+1 of 20, is a
// halo cell for j >= 8, and neighbours j-1 and j+1 on a chain.
ch::Domain chain_domain() {
  ch::Domain d;
  d.nproma = 4;
  d.n_cells_global = 20;
  d.dt = 90.0;
  for (int j = 0; j < 10; ++j) {
    d.glb_index.push_back(2 * j + 1);
    d.decomp_domain.push_back(j >= 8 ? 1 : 0);
    d.clon.push_back(0.1 * j);
    d.clat.push_back(-0.05 * j);
    d.area.push_back(1.0e9 + j);
    d.neighbours.push_back({j - 1, j + 1 < 10 ? j + 1 : -1, -1});
  }
  return d;
}

// Throws from the finish handler and collects comin_print_* lines while alive.
struct Capture {
  std::vector<std::string> lines;
  Capture() {
    ch::set_finish_handler([](const std::string& routine, const std::string& text) {
      throw ch::PluginFinishError(routine + ": " + text);
    });
    // Lines arrive as ComIn prints them, "INFO(plugin): message"; keep the message.
    ch::set_print_sink([this](bool warning, const std::string& line) {
      const size_t colon = line.find("): ");
      lines.push_back((warning ? "W " : "") + (colon == std::string::npos ? line : line.substr(colon + 3)));
    });
  }
  ~Capture() {
    ch::set_finish_handler({});
    ch::set_print_sink({});
  }
};

class HostLibrary : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ensure_mpi(); }
  Capture capture;
};

ch::PluginSpec plugin(const std::string& name, const std::string& library, const std::string& options = "",
                      const std::string& comm = "") {
  ch::PluginSpec spec;
  spec.name = name;
  spec.library = library;
  spec.options = options;
  spec.comm = comm;
  return spec;
}

ch::VariableInfo levels(int nlev) {
  ch::VariableInfo info;
  info.nlev = nlev;
  return info;
}

size_t offset2(int j, int nproma) { return static_cast<size_t>(j % nproma) + nproma * (j / nproma); }

}  // namespace

// Nests: domain 2 a child of domain 1 (Domain::parent_id); ComIn reports n_dom, max_dom and the
// parent's n_childdom, and each domain's cells answer for their own id.
TEST_F(HostLibrary, NestsAreFurtherDomainsWithTheirParentsChildCount) {
  ch::Host host(MPI_COMM_WORLD, interval());
  host.add_domain(chain_domain());
  ch::Domain bad = chain_domain();
  EXPECT_THROW(host.add_domain(bad), finecast::ConfigError);  // a second domain without a parent
  ch::Domain nest = chain_domain();
  nest.parent_id = 1;
  nest.n_cells_global = 40;
  EXPECT_EQ(host.add_domain(nest), 2);
  EXPECT_EQ(comin_descrdata_get_global_n_dom(), 2);
  EXPECT_EQ(comin_descrdata_get_global_max_dom(), 2);
  EXPECT_EQ(comin_descrdata_get_domain_n_childdom(1), 1);
  EXPECT_EQ(comin_descrdata_get_domain_n_childdom(2), 0);
  EXPECT_EQ(comin_descrdata_get_domain_cells_ncells_global(1), 20);
  EXPECT_EQ(comin_descrdata_get_domain_cells_ncells_global(2), 40);
}

TEST_F(HostLibrary, DescrdataGettersWriteTheWholeShapeOfThePartialBlockLayout) {
  ch::Host host(MPI_COMM_WORLD, interval());
  host.add_domain(chain_domain());
  EXPECT_EQ(comin_descrdata_get_global_nproma(), 4);
  EXPECT_EQ(comin_descrdata_get_global_n_dom(), 1);
  EXPECT_EQ(comin_descrdata_get_domain_cells_ncells(1), 10);
  EXPECT_EQ(comin_descrdata_get_domain_cells_ncells_global(1), 20);
  EXPECT_EQ(comin_descrdata_get_domain_cells_nblks(1), 3);
  EXPECT_DOUBLE_EQ(comin_descrdata_get_timesteplength(1), 90.0);
  EXPECT_EQ(comin_descrdata_get_index(10), 2);
  EXPECT_EQ(comin_descrdata_get_block(10), 3);
  EXPECT_EQ(comin_descrdata_index_lookup_glb2loc_cell(1, 19), 10);  // global 19 = local cell 9
  EXPECT_EQ(comin_descrdata_index_lookup_glb2loc_cell(1, 2), -1);   // even ones live elsewhere

  int shape[3] = {-7, -7, -7};
  const int* gi = nullptr;
  comin_descrdata_get_domain_cells_glb_index(1, &gi, shape);
  EXPECT_EQ(shape[0], 10);
  EXPECT_EQ(shape[1], -7);  // 1-D: one int written
  EXPECT_EQ(gi[9], 19);

  const double* clon = nullptr;
  shape[0] = shape[1] = shape[2] = -7;
  comin_descrdata_get_domain_cells_clon(1, &clon, shape);
  EXPECT_EQ(shape[0], 4);
  EXPECT_EQ(shape[1], 3);
  EXPECT_EQ(shape[2], -7);  // 2-D: two ints written
  for (int j = 0; j < 10; ++j) EXPECT_DOUBLE_EQ(clon[offset2(j, 4)], 0.1 * j) << "cell " << j;
  EXPECT_TRUE(std::isnan(clon[10]) && std::isnan(clon[11]));  // padding of the partial block

  const int* dd = nullptr;
  comin_descrdata_get_domain_cells_decomp_domain(1, &dd, shape);
  EXPECT_EQ(dd[offset2(7, 4)], 0);
  EXPECT_EQ(dd[offset2(8, 4)], 1);
  EXPECT_EQ(dd[11], -1);

  const int* nidx = nullptr;
  const int* nblk = nullptr;
  shape[2] = -7;
  comin_descrdata_get_domain_cells_neighbor_idx(1, &nidx, shape);
  EXPECT_EQ(shape[0], 4);
  EXPECT_EQ(shape[1], 3);
  EXPECT_EQ(shape[2], 3);  // 3-D: three ints written
  comin_descrdata_get_domain_cells_neighbor_blk(1, &nblk, shape);
  // Cell 4 = (idx 1, blk 2): neighbour 0 is cell 3 = (4, 1), neighbour 1 is cell 5 = (2, 2).
  const int plane = 4 * 3;
  EXPECT_EQ(nidx[offset2(4, 4)], 4);
  EXPECT_EQ(nblk[offset2(4, 4)], 1);
  EXPECT_EQ(nidx[offset2(4, 4) + plane], 2);
  EXPECT_EQ(nblk[offset2(4, 4) + plane], 2);
  EXPECT_EQ(nidx[offset2(4, 4) + 2 * plane], 0);  // no third neighbour
  EXPECT_EQ(nidx[offset2(9, 4) + plane], 0);      // chain end

  const int* child = nullptr;
  comin_descrdata_get_domain_cells_child_idx(1, &child, shape);
  EXPECT_EQ(shape[2], 4);
  EXPECT_EQ(child[0], 0);  // no children given
}

TEST_F(HostLibrary, VariablesAreBlockedWithNanPaddingInThePartialLastBlock) {
  ch::Host host(MPI_COMM_WORLD, interval());
  host.add_domain(chain_domain());
  double* t = host.add_variable("temp", 1, levels(2));  // (4, 2, 3, 1, 1)
  int nan_count = 0;
  for (int jb = 0; jb < 3; ++jb)
    for (int jk = 0; jk < 2; ++jk)
      for (int jc = 0; jc < 4; ++jc) {
        const double v = t[jc + 4 * (jk + 2 * jb)];
        const bool padding = jb * 4 + jc >= 10;
        EXPECT_EQ(std::isnan(v), padding) << jc << "," << jk << "," << jb;
        nan_count += std::isnan(v);
      }
  EXPECT_EQ(nan_count, 2 * 2);
  EXPECT_EQ(host.variable("temp", 1), t);
  EXPECT_EQ(host.variable("temp", 2), nullptr);
  EXPECT_THROW(host.add_variable("temp", 1, levels(1)), finecast::ConfigError);
  EXPECT_THROW(host.add_variable("x", 2, levels(1)), finecast::ConfigError);
  // A 2-D field is (nproma, nblks), as ICON's: no level dimension.
  double* ts = host.add_variable("ts", 1, levels(0));
  for (int j = 0; j < 12; ++j) EXPECT_EQ(std::isnan(ts[j]), j >= 10) << j;
}

TEST_F(HostLibrary, StringsHaveExplicitLengthsAndNoTerminatingNul) {
  ch::Host host(MPI_COMM_WORLD, interval());
  const char* val = nullptr;
  int len = 0;
  comin_descrdata_get_simulation_interval_run_stop(&val, &len);
  ASSERT_EQ(len, 19);
  EXPECT_EQ(std::string(val, len), "1979-01-02T00:00:00");
  EXPECT_EQ(val[len], ' ');  // like a blank-padded Fortran buffer
  comin_descrdata_get_simulation_interval_exp_stop(&val, &len);
  EXPECT_EQ(std::string(val, len), "1979-01-11T00:00:00");
  comin_current_get_datetime(&val, &len);
  EXPECT_EQ(std::string(val, len), "1979-01-01T00:00:00");
}

TEST_F(HostLibrary, CallsInTheWrongPhaseAreErrors) {
  ch::Host host(MPI_COMM_WORLD, interval());
  host.add_domain(chain_domain());
  host.add_variable("ts", 1, {});
  auto noop = []() {};
  try {
    comin_callback_register(EP_ATM_TIMELOOP_START, noop);
    FAIL() << "register outside comin_main must fail";
  } catch (const ch::PluginFinishError& e) {
    EXPECT_NE(std::string(e.what()).find("primary constructor"), std::string::npos) << e.what();
  }
  t_comin_var_descriptor d{};
  std::snprintf(d.name, sizeof d.name, "ts");
  d.id = 1;
  EXPECT_THROW(comin_var_request_add(d, false), ch::PluginFinishError);
  EXPECT_THROW(comin_var_get(0, nullptr, d, COMIN_FLAG_READ), ch::PluginFinishError);
  EXPECT_EQ(comin_error_get(), COMIN_ERROR_VAR_GET_OUTSIDE_SECONDARY_CONSTRUCTOR);
  comin_error_reset();
  EXPECT_EQ(comin_error_get(), COMIN_SUCCESS);
  // Errors return per plugin: outside of any plugin there is nobody to ask.
  EXPECT_THROW(comin_error_set_errors_return(true), ch::PluginFinishError);

  // The host's own life cycle is checked too.
  EXPECT_THROW(host.secondary_constructor(), finecast::InternalError);
  EXPECT_THROW(host.run_entry_point(EP_ATM_TIMELOOP_START, 1, "t"), finecast::InternalError);
  host.load_plugins({});
  EXPECT_THROW(host.add_variable("late", 1, {}), finecast::InternalError);
  host.secondary_constructor();
  EXPECT_THROW(comin_var_get(0, nullptr, d, COMIN_FLAG_READ), ch::PluginFinishError);
  EXPECT_THROW(host.run_entry_point(EP_DESTRUCTOR, 1, "t"), finecast::InternalError);
  host.finish();
  EXPECT_EQ(host.phase(), ch::Phase::kFinished);
}

TEST_F(HostLibrary, OnlyOneHostPerProcess) {
  ch::Host host(MPI_COMM_WORLD, interval());
  EXPECT_THROW(ch::Host(MPI_COMM_WORLD, interval()), finecast::InternalError);
}

TEST_F(HostLibrary, PluginsRunInPluginOrderAndExchangeVariables) {
  ch::Host host(MPI_COMM_WORLD, interval());
  host.add_domain(chain_domain());
  double* ts = host.add_variable("ts", 1, {});
  for (int j = 0; j < 10; ++j) ts[offset2(j, 4)] = 280.0 + j;
  // ComIn calls the plugins of an entry point in plugin-list order, one callback per entry point
  // and plugin: b's second registration for EP_ATM_WRITE_OUTPUT_AFTER replaces its first.
  host.load_plugins({plugin("alpha", kLib + "libfinecast_test_plugin_a.so", "request"),
                     plugin("beta", kLib + "libfinecast_test_plugin_b.so", "twice")});
  EXPECT_EQ(host.n_callbacks(EP_ATM_WRITE_OUTPUT_BEFORE), 2);
  EXPECT_EQ(host.n_callbacks(EP_ATM_WRITE_OUTPUT_AFTER), 2);
  ASSERT_NE(host.variable("a_out", 1), nullptr);  // requested in comin_main
  EXPECT_EQ(host.variable("b_out", 1), nullptr);
  host.secondary_constructor();
  host.run_entry_point(EP_ATM_TIMELOOP_START, COMIN_DOMAIN_OUTSIDE_LOOP, "1979-01-01T00:01:30");
  host.run_entry_point(EP_ATM_WRITE_OUTPUT_BEFORE, COMIN_DOMAIN_OUTSIDE_LOOP, "1979-01-01T00:03:00");
  host.run_entry_point(EP_ATM_WRITE_OUTPUT_AFTER, 1, "1979-01-01T00:03:00");
  host.finish();

  const std::string unknown = "unknown_var_is_null=1 error=" + std::to_string(COMIN_ERROR_VAR_GET_VARIABLE_NOT_FOUND);
  const std::vector<std::string> expected = {
      "a main ep=0 dom=-1 name=alpha time=1979-01-01T00:00:00",
      "b main ep=0 dom=-1 name=beta time=1979-01-01T00:00:00",
      "W WARNING: plugin 'beta' registered a second callback for EP_ATM_WRITE_OUTPUT_AFTER: it replaces the "
      "first (ComIn keeps one callback per entry point and plugin)",
      "a sc ep=1 dom=-1 name=alpha time=1979-01-01T00:00:00",
      "a " + unknown,
      "b sc ep=1 dom=-1 name=beta time=1979-01-01T00:00:00",
      "b " + unknown,
      "a cb1 ep=17 dom=-1 name=alpha time=1979-01-01T00:03:00",
      "b cb1 ep=17 dom=-1 name=beta time=1979-01-01T00:03:00",
      "a cb2 ep=18 dom=1 name=alpha time=1979-01-01T00:03:00",
      "b cb1 ep=18 dom=1 name=beta time=1979-01-01T00:03:00",  // the second registration won
      "a finish ep=41 dom=-1 name=alpha time=1979-01-01T00:03:00",
      "b finish ep=41 dom=-1 name=beta time=1979-01-01T00:03:00",
      "a destructor ep=42 dom=-1 name=alpha time=1979-01-01T00:03:00",
      "b destructor ep=42 dom=-1 name=beta time=1979-01-01T00:03:00"};
  EXPECT_EQ(capture.lines, expected);

  const double* out = host.variable("a_out", 1);
  for (int j = 0; j < 10; ++j) EXPECT_DOUBLE_EQ(out[offset2(j, 4)], 2.0 * (280.0 + j)) << "cell " << j;
  EXPECT_TRUE(std::isnan(out[10]) && std::isnan(out[11]));  // the plugin left the padding alone

  // The variable list names the host's and the requested variables, in creation order.
  std::vector<std::string> names;
  for (auto* it = comin_var_get_descr_list_head(); it != nullptr; it = comin_var_get_descr_list_next(it)) {
    t_comin_var_descriptor d{};
    comin_var_get_descr_list_var_desc(it, &d);
    names.push_back(std::string(d.name) + "@" + std::to_string(d.id));
  }
  EXPECT_EQ(names, (std::vector<std::string>{"ts@1", "a_out@1"}));
}

// A host with its fields on a device (ICON built for GPUs): ComIn copies a variable that a plugin
// reads at an entry point without COMIN_FLAG_DEVICE to the host before its callback, and one it
// writes back after it, whole; a plugin that asks with COMIN_FLAG_DEVICE gets the device
// pointer and no copies. The "device" here is a second host array, copied by the host's sync.
TEST_F(HostLibrary, DeviceHostsSyncWhatPluginsReadWithoutTheDeviceFlag) {
  ch::Host host(MPI_COMM_WORLD, interval());
  host.add_domain(chain_domain());
  double* ts = host.add_variable("ts", 1, {});
  std::map<std::string, std::vector<double>> device;
  std::vector<std::string> syncs;
  ch::DeviceSupport support;
  support.name = "test device";
  support.sync = [&](const std::string& name, int domain, bool to_device) {
    syncs.push_back(name + (to_device ? " to device" : " to host"));
    double* h = host.variable(name, domain);
    std::vector<double>& d = device.at(name);
    if (to_device)
      std::copy(h, h + d.size(), d.begin());
    else
      std::copy(d.begin(), d.end(), h);
  };
  host.set_device(support);
  device["ts"].assign(12, 0.0);
  for (int j = 0; j < 10; ++j) device["ts"][offset2(j, 4)] = 300.0 + j;  // the model's state is there
  host.set_device_pointer("ts", 1, device["ts"].data());
  host.load_plugins({plugin("alpha", kLib + "libfinecast_test_plugin_a.so", "request"),
                     plugin("beta", kLib + "libfinecast_test_plugin_b.so", "device")});
  device["a_out"].assign(12, -1.0);
  host.set_device_pointer("a_out", 1, device["a_out"].data());
  host.secondary_constructor();
  EXPECT_TRUE(syncs.empty());
  host.run_entry_point(EP_ATM_WRITE_OUTPUT_BEFORE, COMIN_DOMAIN_OUTSIDE_LOOP, "1979-01-01T00:03:00");
  // alpha reads ts and writes a_out on the host: ts comes to the host before its callback and
  // a_out goes to the device after it; beta reads ts on the device: nothing is copied for it.
  EXPECT_EQ(syncs, (std::vector<std::string>{"ts to host", "a_out to device"}));
  for (int j = 0; j < 10; ++j) {
    EXPECT_DOUBLE_EQ(ts[offset2(j, 4)], 300.0 + j);
    EXPECT_DOUBLE_EQ(device["a_out"][offset2(j, 4)], 2.0 * (300.0 + j)) << "cell " << j;
  }
  // Only the entry point the variables were asked for syncs them.
  host.run_entry_point(EP_ATM_WRITE_OUTPUT_AFTER, 1, "1979-01-01T00:03:00");
  EXPECT_EQ(syncs.size(), 2u);
  const ch::DeviceSyncStats st = host.device_sync_stats();
  EXPECT_EQ(st.to_host, 1);
  EXPECT_EQ(st.to_device, 1);
  EXPECT_EQ(st.bytes, 2 * 12 * static_cast<int64_t>(sizeof(double)));
  host.finish();
  EXPECT_NE(std::find(capture.lines.begin(), capture.lines.end(), "b has_device=1 ts_device_ptr=1"),
            capture.lines.end());
  EXPECT_EQ(std::string(comin_descrdata_get_global_has_device() ? "yes" : "no"), "yes");
}

TEST_F(HostLibrary, RegisteringOutsideCominMainSetsTheErrorStateWhenErrorsReturn) {
  ch::Host host(MPI_COMM_WORLD, interval());
  host.add_domain(chain_domain());
  host.add_variable("ts", 1, {});
  host.load_plugins({plugin("alpha", kLib + "libfinecast_test_plugin_a.so", "late_register")});
  host.secondary_constructor();
  EXPECT_NE(
      std::find(capture.lines.begin(), capture.lines.end(),
                "a late_register_error=" + std::to_string(COMIN_ERROR_CALLBACK_REGISTER_OUTSIDE_PRIMARYCONSTRUCTOR)),
      capture.lines.end());
  EXPECT_EQ(host.n_callbacks(EP_ATM_TIMELOOP_START), 0);
}

TEST_F(HostLibrary, LibraryWithoutCominMainIsNamedInTheError) {
  ch::Host host(MPI_COMM_WORLD, interval());
  host.add_domain(chain_domain());
  const std::string lib = kLib + "libfinecast_test_no_main.so";
  try {
    host.load_plugins({plugin("nomain", lib)});
    FAIL() << "loading a library without comin_main must fail";
  } catch (const finecast::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(lib), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("comin_main"), std::string::npos) << e.what();
  }
}

TEST_F(HostLibrary, MissingLibraryIsNamedInTheError) {
  ch::Host host(MPI_COMM_WORLD, interval());
  host.add_domain(chain_domain());
  const std::string lib = kLib + "libdoes_not_exist.so";
  try {
    host.load_plugins({plugin("ghost", lib)});
    FAIL() << "dlopen of a missing file must fail";
  } catch (const finecast::IoError& e) {
    EXPECT_NE(std::string(e.what()).find(lib), std::string::npos) << e.what();
  }
}

TEST_F(HostLibrary, PluginFinishStopsTheHostEvenWhenTheHandlerReturns) {
  ch::Host host(MPI_COMM_WORLD, interval());
  host.add_domain(chain_domain());
  std::vector<std::string> calls;
  ch::set_finish_handler(
      [&](const std::string& routine, const std::string& text) { calls.push_back(routine + ": " + text); });
  try {
    host.load_plugins({plugin("alpha", kLib + "libfinecast_test_plugin_a.so", "finish_in_main")});
    FAIL() << "comin_plugin_finish must stop load_plugins";
  } catch (const ch::PluginFinishError& e) {
    EXPECT_NE(std::string(e.what()).find("stop requested by the options"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("plugin 'alpha'"), std::string::npos) << e.what();
  }
  EXPECT_EQ(calls, (std::vector<std::string>{"test_plugin: stop requested by the options"}));
}

TEST_F(HostLibrary, PluginCommunicatorExistsOnlyWhenNamed) {
  {
    ch::Host host(MPI_COMM_WORLD, interval());
    host.add_domain(chain_domain());
    host.add_variable("ts", 1, {});
    host.load_plugins({plugin("alpha", kLib + "libfinecast_test_plugin_a.so", "plugin_comm", "finecast")});
    host.secondary_constructor();
    int size = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    EXPECT_NE(std::find(capture.lines.begin(), capture.lines.end(), "a plugin_comm_size=" + std::to_string(size)),
              capture.lines.end());
  }
  ch::Host host(MPI_COMM_WORLD, interval());
  host.add_domain(chain_domain());
  host.add_variable("ts", 1, {});
  host.load_plugins({plugin("alpha", kLib + "libfinecast_test_plugin_a.so", "plugin_comm", "")});
  try {
    host.secondary_constructor();
    FAIL() << "comin_parallel_get_plugin_mpi_comm without comm must abort";
  } catch (const ch::PluginFinishError& e) {
    EXPECT_NE(std::string(e.what()).find("comin_parallel_get_plugin_mpi_comm"), std::string::npos);
  }
}

TEST_F(HostLibrary, RequestsGetComInDefaultsAndTheirMetadata) {
  ch::Host host(MPI_COMM_WORLD, interval());
  ch::Domain d = chain_domain();
  d.nlev = 5;
  host.add_domain(d);
  host.add_variable("ts", 1, {});
  host.load_plugins({plugin("alpha", kLib + "libfinecast_test_plugin_a.so", "metadata")});
  host.secondary_constructor();
  auto has = [&](const std::string& line) {
    return std::find(capture.lines.begin(), capture.lines.end(), line) != capture.lines.end();
  };
  EXPECT_TRUE(has("a type_clash_error=" + std::to_string(COMIN_ERROR_VAR_METADATA_INCONSISTENT_TYPE)));
  EXPECT_TRUE(has("a tracer_domain_error=" + std::to_string(COMIN_ERROR_TRACER_REQUEST_NOT_FOR_ALL_DOMAINS)));
  EXPECT_TRUE(has("a exclusive_error=" + std::to_string(COMIN_ERROR_VAR_REQUEST_EXISTS_REQUEST_LMODEXCLUSIVE)));
  // No zaxis_id: 3-D with the domain's levels; 2-D as asked, in float; the tracer is 3-D and the
  // first of its container (ncontained is 0-based in C). 16 metadata keys: ComIn's defaults
  // (zaxis_id, hgrid_id, restart, multi_timelevel, tracer, 6 tracer_*, units, standard_name,
  // long_name, short_name, datatype) + "scale".
  EXPECT_TRUE(has("a m3d shape=4,5,3,1,1 sem=25388 zaxis=2 ncontained=-1 keys=17 float=0")) << capture.lines.size();
  EXPECT_TRUE(has("a m2d shape=4,3,1,1,1 sem=23888 zaxis=1 ncontained=-1 keys=16 float=1"));
  EXPECT_TRUE(has("a trc shape=4,5,3,1,1 sem=25388 zaxis=2 ncontained=0 keys=16 float=0"));
  EXPECT_TRUE(has("a m3d units=K scale=0.5 typeid=1 undefined=-1"));
}

TEST_F(HostLibrary, AnExclusiveRequestCannotTakeOverAHostField) {
  ch::Host host(MPI_COMM_WORLD, interval());
  host.add_domain(chain_domain());
  host.add_variable("ts", 1, {});
  host.add_variable("probe_out", 1, {});
  try {
    host.load_plugins({plugin("probe", kLib + "libfinecast_probe_plugin.so", "vars=ts out=probe_out")});
    FAIL() << "an exclusive request of a host field must fail";
  } catch (const finecast::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("'probe_out'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("exclusive"), std::string::npos) << e.what();
  }
}

TEST_F(HostLibrary, PluginsThatCannotRunHereAreRefusedAtLoadWithTheReason) {
  ch::Host host(MPI_COMM_WORLD, interval());
  host.add_domain(chain_domain());
  auto load_error = [&](const std::string& lib) {
    try {
      host.load_plugins({plugin("x", kLib + lib)});
    } catch (const finecast::Error& e) {
      return std::string(e.what());
    }
    return std::string("loaded");
  };
  // ComIn finds comin_plugin_init through the plugin's own dependencies: a plugin must link libcomin.
  const std::string no_libcomin = load_error("libfinecast_test_no_libcomin.so");
  EXPECT_NE(no_libcomin.find("cannot load 'comin_plugin_init'"), std::string::npos) << no_libcomin;
  EXPECT_NE(no_libcomin.find("libcomin.so.0"), std::string::npos) << no_libcomin;
  const std::string fortran = load_error("libfinecast_test_fortran_like.so");
  EXPECT_NE(fortran.find("__comin_descrdata_MOD_comin_descrdata_get_global"), std::string::npos) << fortran;
  EXPECT_NE(fortran.find("Fortran plugin"), std::string::npos) << fortran;
  EXPECT_NE(fortran.find("comin_replay"), std::string::npos) << fortran;
}

TEST_F(HostLibrary, ProbeSeesAHostThatBehavesLikeComIn) {
  ch::Host host(MPI_COMM_WORLD, interval());
  host.add_domain(chain_domain());
  double* ts = host.add_variable("ts", 1, {});
  for (int j = 0; j < 10; ++j) ts[offset2(j, 4)] = 280.5 + j;
  host.load_plugins({plugin("probe", kLib + "libfinecast_probe_plugin.so", "vars=ts out=probe_out")});
  host.secondary_constructor();
  host.run_entry_point(EP_ATM_WRITE_OUTPUT_BEFORE, COMIN_DOMAIN_OUTSIDE_LOOP, "1979-01-01T00:03:00");
  host.run_entry_point(EP_ATM_WRITE_OUTPUT_AFTER, COMIN_DOMAIN_OUTSIDE_LOOP, "1979-01-01T00:03:00");
  host.finish();
  // Owned cells 0..7 (global 1, 3, .., 15): ts sums to 8 * 280.5 + 28, the output to 2 ts + 1.
  const std::vector<std::string> expected = {"probe main version=0.3 wp=8 n_dom=1 nproma=4",
                                             "probe main ep_name=EP_ATM_WRITE_OUTPUT_BEFORE 17",
                                             "probe sc ncells_global=20 owned=8 glb_index_sum=64",
                                             "probe sc nlev=1 dt=90 max_dom=1",
                                             "probe var ts sem=23888 zaxis_id=1 level=0",
                                             "probe out probe_out long_name=probe zaxis_id=1 block_dim=1",
                                             "probe ep=17 time=1979-01-01T00:03:00 dom=-1 ep_now=17",
                                             "probe checksum ts:0 = 2272000",
                                             "probe checksum probe_out = 4552000",
                                             "probe destructor  dom=-1 ep=42"};
  EXPECT_EQ(capture.lines, expected);
}

TEST_F(HostLibrary, VerticesEdgesAndLoopIndicesFollowIcon) {
  // Two triangles sharing an edge, cell 0 owned, cell 1 a halo cell: 4 vertices, 5 edges.
  ch::Domain d;
  d.nproma = 2;
  d.n_cells_global = 2;
  d.dt = 60;
  d.glb_index = {1, 2};
  d.decomp_domain = {0, 1};
  d.clon = {0.0, 0.1};
  d.clat = {0.0, 0.0};
  d.area = {1.0, 1.0};
  d.neighbours = {{1, -1, -1}, {0, -1, -1}};
  d.vertices = {{0, 1, 2}, {1, 2, 3}};
  d.n_verts_global = 4;
  d.vert_glb_index = {1, 2, 3, 4};
  d.vlon = {0, 1, 2, 3};
  d.vlat = {0, 0, 0, 0};
  d.cell_edges = {{0, 1, 2}, {1, 3, 4}};
  d.n_edges_global = 5;
  d.edge_glb_index = {1, 2, 3, 4, 5};
  d.elon = {0, 1, 2, 3, 4};
  d.elat = {0, 0, 0, 0, 0};
  d.edge_cells = {{0, -1}, {0, 1}, {0, -1}, {1, -1}, {1, -1}};
  d.edge_vertices = {{0, 1}, {1, 2}, {2, 0}, {2, 3}, {3, 1}};
  ch::Host host(MPI_COMM_WORLD, interval());
  host.add_domain(d);
  EXPECT_EQ(comin_descrdata_get_domain_verts_nverts(1), 4);
  EXPECT_EQ(comin_descrdata_get_domain_edges_nedges(1), 5);
  int shape[3] = {0, 0, 0};
  const int* cells_of_edge = nullptr;
  comin_descrdata_get_domain_edges_cell_idx(1, &cells_of_edge, shape);
  EXPECT_EQ(shape[0], 2);  // (nproma, nblks, 2)
  EXPECT_EQ(shape[1], 3);
  EXPECT_EQ(shape[2], 2);
  EXPECT_EQ(cells_of_edge[1], 1);      // edge 1 (idx 2, blk 1): first cell is cell 0 = (1, 1)
  EXPECT_EQ(cells_of_edge[1 + 6], 2);  // ... second cell is cell 1 = (2, 1)
  const int* edges_of_vertex = nullptr;
  comin_descrdata_get_domain_verts_num_edges(1, &edges_of_vertex, shape);
  EXPECT_EQ(edges_of_vertex[1], 3);  // vertex 1 has edges 0, 1, 4
  // ICON's loop bounds: owned cells end at min_rlcell_int, halo cells at min_rlcell.
  int start = 0, end = 0;
  comin_descrdata_get_cell_indices(1, 1, 1, 1, &start, &end, ch::kGrfBdyWidthC + 1, ch::kMinRlCellInt);
  EXPECT_EQ(start, 1);
  EXPECT_EQ(end, 1);
  comin_descrdata_get_cell_indices(1, 1, 1, 1, &start, &end, 1, ch::kMinRlCell);
  EXPECT_EQ(end, 2);
  EXPECT_EQ(comin_descrdata_get_cell_npromz(1), 2);
  EXPECT_EQ(comin_descrdata_get_index(-3), -1);  // ICON keeps the sign
  EXPECT_EQ(comin_descrdata_get_block(0), 1);
  char name[COMIN_MAX_LEN_EP_NAME + 1];
  comin_callback_get_ep_name(EP_DESTRUCTOR, name);
  EXPECT_STREQ(name, "EP_DESTRUCTOR");
  const double* hhl = nullptr;  // no vertical grid given: ComIn stops the run
  EXPECT_THROW(comin_descrdata_get_domain_cells_hhl(1, &hhl, shape), ch::PluginFinishError);
}

TEST(CominNamelist, ParsesPluginListInIndexOrder) {
  const std::string text = R"(
&run_nml
  nsteps = 10 ! another group first
/
&COMIN_NML
  plugin_list(2)%name           = 'second'
  plugin_list(2)%plugin_library = "libtwo.so", plugin_list(2)%options = 'it''s here'
  ! a comment line
  Plugin_List(1)%Name = "finecast"   ! trailing comment with / slash
  plugin_list(1)%plugin_library = "build/lib/libfinecast_comin.so"
  plugin_list(1)%options = "configs/demo.yaml"
  plugin_list(1)%comm = "finecast_comm"
/
)";
  const auto specs = ch::parse_comin_namelist(text);
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].name, "finecast");
  EXPECT_EQ(specs[0].library, "build/lib/libfinecast_comin.so");
  EXPECT_EQ(specs[0].options, "configs/demo.yaml");
  EXPECT_EQ(specs[0].comm, "finecast_comm");
  EXPECT_EQ(specs[1].name, "second");
  EXPECT_EQ(specs[1].library, "libtwo.so");
  EXPECT_EQ(specs[1].options, "it's here");
  EXPECT_EQ(specs[1].comm, "");
}

TEST(CominNamelist, ErrorsNameTheProblem) {
  auto message = [](const std::string& text) {
    try {
      ch::parse_comin_namelist(text);
    } catch (const finecast::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("&other_nml /").find("no &comin_nml"), std::string::npos);
  EXPECT_NE(message("&comin_nml\n plugin_list(1)%name='x'\n/").find("no plugin_library"), std::string::npos);
  EXPECT_NE(message("&comin_nml\n plugin_list(1)%colour='x'\n/").find("unknown field 'colour'"), std::string::npos);
  EXPECT_NE(message("&comin_nml\n\n nsteps=3\n/").find("line 3: unknown key 'nsteps'"), std::string::npos);
  EXPECT_NE(message("&comin_nml\n plugin_list(2)%name='x'\n plugin_list(2)%plugin_library='y'\n/")
                .find("plugin_list(1) is missing"),
            std::string::npos);
  EXPECT_NE(message("&comin_nml\n plugin_list(1)%name='x\n/").find("unterminated string"), std::string::npos);
  EXPECT_NE(message("&comin_nml\n plugin_list(1)%name='x'\n").find("not closed"), std::string::npos);
}

// A machine as the cost model sees it: ranks placed on nodes, two link classes (between ranks
// of one node, and between nodes) each with a latency (alpha) and an inverse bandwidth (beta),
// and the cost per byte of reducing or copying on a rank's device (gamma).
//
// Optionally a second regime: a node's caches hold cache_bytes; a call whose working set on a
// node (every buffer its ranks there touch, node_working_set) reaches that runs at the slower
// beyond-cache bandwidths. at_working_set() gives the machine with the rates for one call, which
// the walk then charges as usual. Without cache_bytes every size runs at the one set of rates.
//
// Built-in machines come from uniform() (the textbook network of the closed forms) and
// local_default(); topology files (model/topology.hpp, docs/model.md) fill the same struct.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace arlab::detail {

struct LinkCost {
  double alpha_us = 0;     // per message: the time from posting to the first byte arriving
  double us_per_byte = 0;  // beta: 1 / bandwidth of one direction, as one rank sees it
  // Who moves a message's bytes: false, a DMA engine or NIC (the ports only; alpha is in
  // flight and overlaps the next message); true, the receiving rank's CPU (shared memory
  // between processes: the receiver copies the data in and runs the handshake), so the
  // transfer, alpha included, occupies the receiver's compute unit and cannot overlap its
  // reductions or the next message.
  bool cpu_copies = false;
  // Whose port a message uses: false, each rank's own (a NIC per GPU, shared memory); true,
  // one port per node, shared by all its ranks (one NIC per node): the node's messages over
  // this link class then stream one after another, each direction, at us_per_byte.
  bool shared_by_node = false;
  // A protocol switch (eager -> rendezvous): messages of more than rendezvous_bytes pay
  // alpha_us_rendezvous instead of alpha_us (the handshake before the data moves); 0: no switch.
  double rendezvous_bytes = 0;
  double alpha_us_rendezvous = 0;
  // Measured latencies (a topology file's latency_us): alpha at each of these message sizes,
  // ascending. A message of up to the last size pays the latency interpolated linearly in
  // log(bytes) between its neighbours (the first one's below it), in place of the two numbers
  // above; a larger one pays them. Shared-memory protocols have several steps (fast boxes,
  // eager fragments, a rendezvous handshake) and latency rises gradually between them, which
  // one intercept and one step cannot follow. Empty: alpha_us and the switch alone.
  struct LatencyPoint {
    double bytes = 0, alpha_us = 0;
  };
  std::vector<LatencyPoint> latency;
  // Writing what a peer has read: the cost per byte, at each of these sizes, of a write (a
  // receive, reduction or copy) over bytes that a peer on this link has read since the rank
  // last wrote them. Over shared memory the peer's CPU copied them out and may still hold them
  // in its cache, so every line written must first be taken back. `writeback` (a topology
  // file's writeback_us_per_byte) is for a write right after the send that carried the bytes,
  // with no other send between (recursive doubling in place: its sum over the buffer it has
  // just sent); `writeback_later` (writeback_later_us_per_byte) for a later one (the ring's
  // allgather receiving over what its reduce-scatter sent, or what the peer read in the last
  // call), at each distance: the bytes the rank sent between the send and the write. By then
  // the peer has read about as much more, and the lines may have left its caches. Interpolated
  // linearly in log(bytes), the end values held
  // beyond the ends (where the cache is shared the largest size measures 0; a peer with a last
  // level of its own keeps paying); beyond the cache only `writeback` (at_working_set); empty:
  // nothing is charged.
  struct WritebackPoint {
    double bytes = 0, us_per_byte = 0;
  };
  std::vector<WritebackPoint> writeback, writeback_later;

  double alpha_for(double bytes) const;
  double writeback_us_per_byte(double bytes) const;
  double writeback_later_us_per_byte(double bytes) const;
};

struct Machine {
  std::string name;
  std::string description;        // free text from the file ("" for built-ins)
  std::string source;             // the file it was loaded from, or "built-in"
  int nodes = 1;
  int ranks_per_node = 0;         // 0: every rank on one node
  std::vector<int> rank_to_node;  // explicit placement, rank i on node rank_to_node[i];
                                  // empty: block placement, rank / ranks_per_node
  LinkCost intra, inter;
  double reduce_us_per_byte = 0;  // gamma: per byte of output of a reduction
  double copy_us_per_byte = 0;    // per byte copied locally
  // Per call, beyond its messages and reductions: starting and finishing one run of the
  // executor and transport (arlab-calibrate measures it); added once to every prediction.
  double call_us = 0;
  // The machine's state when it was calibrated (calibrate/state_probe.hpp), for arlab-bench to
  // tell lines measured in another state; 0: unknown. No prediction uses it.
  double state_probe_us = 0;

  // The second regime. 0 in a field: the same rate as in cache.
  struct BeyondCache {
    double intra_us_per_byte = 0, inter_us_per_byte = 0;
    double reduce_us_per_byte = 0, copy_us_per_byte = 0;
  };
  double cache_bytes = 0;  // cache of one node; 0: no second regime
  BeyondCache beyond_cache;

  // The rank count the description is written for (0 when it places any number of ranks).
  int ranks() const;
  // The node of each of `p` ranks. Block placement extends to any p (more nodes of the same
  // kind); an explicit placement throws Error(InvalidArgument) unless it names exactly p ranks.
  std::vector<int> placement(int p) const;

  // The largest working set on any node: bytes_per_rank[r] summed over the ranks of each node.
  double node_working_set(const std::vector<double>& bytes_per_rank) const;
  // Whether a call with this node working set runs at the in-cache rates (always with one regime).
  bool fits_cache(double working_set) const;
  // The machine a call with this node working set runs on: the beyond-cache rates (and no
  // later write-back) when cache_bytes > 0 and working_set >= cache_bytes, else this machine;
  // one regime either way.
  Machine at_working_set(double working_set) const;
  // The segment size calls are cut into here (Shape::segment_bytes): `requested`, or 0 where
  // the links move the bytes themselves (not copied by CPUs: GPUs over NVLink), so that
  // segments would keep no CPU's cache warm and only add their latencies.
  std::size_t segment_bytes(std::size_t requested) const { return intra.cpu_copies ? requested : 0; }

  // Every link alike: the machine of the textbook closed forms.
  static Machine uniform(double alpha_us, double beta_us_per_byte, double gamma_us_per_byte);
  // One shared-memory node, ranks talking through MPI: the default when no topology file is
  // given. See machine.cpp for where the numbers come from.
  static Machine local_default();

 private:
  int node_of(int rank) const;
};

}  // namespace arlab::detail

// Hostlists, launch environments and role assignment from hand-written environments.
#include <catch2/catch.hpp>

#include "launcher/cluster/hostlist.h"
#include "launcher/cluster/role_assignment.h"
#include "launcher/cluster/sbatch_script.h"
#include "launcher/cluster/task_environment.h"

namespace monsoon {
namespace {

using Hosts = std::vector<std::string>;

TEST_CASE("ExpandHostlist: ranges, zero padding, several groups and plain names",
          "[launcher][hostlist]") {
  CHECK(*ExpandHostlist("node[01-04,07]") ==
        Hosts{"node01", "node02", "node03", "node04", "node07"});
  CHECK(*ExpandHostlist("mn[1-3]") == Hosts{"mn1", "mn2", "mn3"});
  CHECK(*ExpandHostlist("login,gpu[9-11],cpu007") ==
        Hosts{"login", "gpu9", "gpu10", "gpu11", "cpu007"});
  CHECK(*ExpandHostlist("r[1-2]n[01-02]") == Hosts{"r1n01", "r1n02", "r2n01", "r2n02"});
  CHECK(*ExpandHostlist("a[098-101]") == Hosts{"a098", "a099", "a100", "a101"});
  CHECK(*ExpandHostlist("x[5]") == Hosts{"x5"});
}

TEST_CASE("ExpandHostlist: malformed lists are InvalidArgument naming the text",
          "[launcher][hostlist]") {
  for (const char* bad :
       {"", "node[1-", "node]1[", "node[3-1]", "node[a-b]", "n[1,,2]", "a,,b", "node[-2]"}) {
    auto r = ExpandHostlist(bad);
    INFO(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(absl::IsInvalidArgument(r.status()));
    CHECK(std::string(r.status().message()).find(std::string("'") + bad + "'") !=
          std::string::npos);
  }
}

TEST_CASE("ExpandTaskCounts: SLURM's 2(x3),1 syntax", "[launcher][hostlist]") {
  CHECK(*ExpandTaskCounts("2(x3),1") == std::vector<int>{2, 2, 2, 1});
  CHECK(*ExpandTaskCounts("4,2,1") == std::vector<int>{4, 2, 1});
  CHECK(*ExpandTaskCounts("1(x2)") == std::vector<int>{1, 1});
  for (const char* bad : {"", "2(x)", "2(x0)", "x", "2(3)", "-1"}) {
    INFO(bad);
    CHECK(absl::IsInvalidArgument(ExpandTaskCounts(bad).status()));
  }
}

EnvMap SlurmTask(int rank) {
  // Seven tasks over three nodes, as srun -N3 -n7 sets them.
  const int node = rank < 4 ? 0 : rank < 6 ? 1 : 2;
  const int local = rank < 4 ? rank : rank < 6 ? rank - 4 : 0;
  return {{"SLURM_JOB_ID", "12"},
          {"SLURM_STEP_ID", "0"},
          {"SLURM_PROCID", std::to_string(rank)},
          {"SLURM_NTASKS", "7"},
          {"SLURM_LOCALID", std::to_string(local)},
          {"SLURM_NODEID", std::to_string(node)},
          {"SLURM_STEP_NODELIST", "mn[1-3]"},
          {"SLURM_STEP_TASKS_PER_NODE", "4,2,1"},
          {"SLURMD_NODENAME", "mn" + std::to_string(node + 1)}};
}

TEST_CASE("DetectTaskEnvironment: an srun task", "[launcher][env]") {
  auto t = DetectTaskEnvironment(SlurmTask(5));
  REQUIRE(t.ok());
  CHECK(t->source == LaunchSource::kSlurm);
  CHECK(t->rank == 5);
  CHECK(t->size == 7);
  CHECK(t->local_rank == 1);
  CHECK(t->node_index == 1);
  CHECK(t->node_name == "mn2");
  CHECK(t->nodes == Hosts{"mn1", "mn2", "mn3"});
  CHECK(t->tasks_per_node == std::vector<int>{4, 2, 1});
  CHECK(t->het_group_sizes.empty());
  CHECK(t->Describe() == "SLURM task 5/7 (local 1) on node mn2 [1/3]");
}

TEST_CASE("DetectTaskEnvironment: the job node list is the fallback, GPUs follow the local rank",
          "[launcher][env]") {
  EnvMap env = SlurmTask(2);
  env.erase("SLURM_STEP_NODELIST");
  env["SLURM_JOB_NODELIST"] = "mn[1-3]";
  env["CUDA_VISIBLE_DEVICES"] = "4,5";
  auto t = DetectTaskEnvironment(env);
  REQUIRE(t.ok());
  CHECK(t->nodes.size() == 3);
  CHECK(t->gpu == 0);  // local rank 2 of the two visible devices
  env["CUDA_VISIBLE_DEVICES"] = "";
  CHECK_FALSE(DetectTaskEnvironment(env)->gpu.has_value());
  env.erase("CUDA_VISIBLE_DEVICES");
  CHECK(DetectTaskEnvironment(env)->gpu == 2);
}

TEST_CASE("DetectTaskEnvironment: missing or malformed SLURM variables are named",
          "[launcher][env]") {
  auto error = [](EnvMap env) {
    auto t = DetectTaskEnvironment(env);
    return t.ok() ? std::string() : std::string(t.status().message());
  };
  EnvMap env = SlurmTask(1);
  env.erase("SLURM_PROCID");
  CHECK(error(env) == "SLURM_PROCID is not set in this srun task");
  env = SlurmTask(1);
  env["SLURM_NTASKS"] = "seven";
  CHECK(error(env) == "SLURM_NTASKS='seven' is not a non-negative integer (srun task)");
  env = SlurmTask(1);
  env["SLURM_STEP_NODELIST"] = "mn[1-";
  CHECK(error(env) == "SLURM_STEP_NODELIST: malformed host list 'mn[1-': unmatched '['");
  env = SlurmTask(1);
  env["SLURM_STEP_TASKS_PER_NODE"] = "4,3";
  CHECK(error(env).find("lists 2 nodes but SLURM_STEP_NODELIST has 3") != std::string::npos);
  env = SlurmTask(1);
  env["SLURM_PROCID"] = "9";
  CHECK(error(env) == "SLURM_PROCID=9 is not below SLURM_NTASKS=7");
  env = SlurmTask(1);
  env.erase("SLURM_STEP_ID");
  CHECK(error(env).find("this is the batch script, not an srun task") != std::string::npos);
}

TEST_CASE("DetectTaskEnvironment: heterogeneous steps, Open MPI, PMI and plain local mode",
          "[launcher][env]") {
  EnvMap het = SlurmTask(3);
  het["SLURM_NTASKS_HET_GROUP_0"] = "2";
  het["SLURM_NTASKS_HET_GROUP_1"] = "4";
  het["SLURM_NTASKS_HET_GROUP_2"] = "1";
  CHECK(DetectTaskEnvironment(het)->het_group_sizes == std::vector<int>{2, 4, 1});
  het["SLURM_NTASKS_HET_GROUP_2"] = "2";
  CHECK(absl::IsInvalidArgument(DetectTaskEnvironment(het).status()));

  auto ompi = DetectTaskEnvironment({{"OMPI_COMM_WORLD_RANK", "3"},
                                     {"OMPI_COMM_WORLD_SIZE", "5"},
                                     {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}});
  REQUIRE(ompi.ok());
  CHECK(ompi->source == LaunchSource::kOpenMpi);
  CHECK(ompi->rank == 3);
  CHECK(ompi->local_rank == 1);
  CHECK(absl::IsInvalidArgument(DetectTaskEnvironment({{"OMPI_COMM_WORLD_RANK", "3"}}).status()));
  auto pmi = DetectTaskEnvironment({{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}});
  REQUIRE(pmi.ok());
  CHECK(pmi->source == LaunchSource::kPmi);
  CHECK(DetectTaskEnvironment({{"HOME", "/root"}})->source == LaunchSource::kLocal);
}

ClusterConfig Cluster(int servers, int workers, bool evaluator) {
  ClusterConfig c;
  c.servers = servers;
  c.workers = workers;
  c.evaluator = evaluator;
  return c;
}

TaskEnvironment Task(int rank, int size) {
  TaskEnvironment t;
  t.source = LaunchSource::kSlurm;
  t.rank = rank;
  t.size = size;
  return t;
}

TEST_CASE("AssignRole: by counts in rank order; extra tasks idle", "[launcher][roles]") {
  const ClusterConfig c = Cluster(2, 3, true);
  std::vector<std::string> roles;
  for (int r = 0; r < 7; ++r) roles.push_back(DescribeAssignment(*AssignRole(c, Task(r, 7))));
  CHECK(roles == std::vector<std::string>{"server 0", "server 1", "worker 0", "worker 1",
                                          "worker 2", "evaluator", "idle"});
}

TEST_CASE("AssignRole: an undersized allocation says what to ask for", "[launcher][roles]") {
  auto r = AssignRole(Cluster(2, 2, true), Task(0, 3));
  REQUIRE(absl::IsFailedPrecondition(r.status()));
  CHECK(std::string(r.status().message()) ==
        "the launch has 3 task(s) but the job needs 5 (2 server(s), 2 worker(s), 1 evaluator): "
        "ask for 5 tasks (sbatch/srun --ntasks=5) or shrink the cluster section");
}

TEST_CASE("AssignRole: an explicit rank map numbers roles in rank order", "[launcher][roles]") {
  ClusterConfig c = Cluster(1, 2, true);
  c.ranks = {RoleKind::kWorker, RoleKind::kServer, RoleKind::kEvaluator, RoleKind::kWorker};
  std::vector<std::string> roles;
  for (int r = 0; r < 4; ++r) roles.push_back(DescribeAssignment(*AssignRole(c, Task(r, 4))));
  CHECK(roles == std::vector<std::string>{"worker 0", "server 0", "evaluator", "worker 1"});
  CHECK(absl::IsFailedPrecondition(AssignRole(c, Task(0, 3)).status()));
}

TEST_CASE("AssignRole: heterogeneous components are servers, workers, evaluator",
          "[launcher][roles]") {
  const ClusterConfig c = Cluster(2, 3, true);
  TaskEnvironment t = Task(0, 6);
  t.het_group_sizes = {2, 3, 1};
  std::vector<std::string> roles;
  for (int r = 0; r < 6; ++r) {
    t.rank = r;
    roles.push_back(DescribeAssignment(*AssignRole(c, t)));
  }
  CHECK(roles == std::vector<std::string>{"server 0", "server 1", "worker 0", "worker 1",
                                          "worker 2", "evaluator"});
  t.het_group_sizes = {2, 4};
  t.size = 6;
  auto r = AssignRole(c, t);
  CHECK(std::string(r.status().message()).find("has 2 component(s) but this job needs 3") !=
        std::string::npos);
  t.het_group_sizes = {3, 2, 1};
  r = AssignRole(c, t);
  CHECK(std::string(r.status().message()) ==
        "heterogeneous job component 0 has 3 task(s) but servers (cluster.servers) need(s) 2");
}

TEST_CASE("SbatchScript: homogeneous and heterogeneous scripts", "[launcher][sbatch]") {
  JobConfig config;
  config.job = "demo";
  config.cluster = Cluster(2, 2, true);
  config.slurm.nodes = 2;
  config.slurm.partition = "gpu";
  config.slurm.gpus_per_node = 1;
  config.slurm.extra = {"--mail-type=END"};
  config.slurm.setup = {"module load cuda/12.4", "export OMP_NUM_THREADS=1"};
  SbatchInputs in{"/opt/monsoon",       "/jobs/demo.yaml",         {"training.epochs=3"},
                  "/scratch/runs/demo", "/opt/libmonsoon_cuda.so", ""};
  const std::string homogeneous = SbatchScript(config, in);
  CHECK(homogeneous.find("MONSOON='/opt/monsoon'\nexport "
                         "MONSOON_CUDA_PLUGIN='/opt/libmonsoon_cuda.so'\n") != std::string::npos);
  for (const char* line :
       {"#SBATCH --nodes=2\n", "#SBATCH --ntasks=5\n", "#SBATCH --gpus-per-node=1\n",
        "#SBATCH --gpu-bind=map_gpu:0\n",
        "module load cuda/12.4\nexport OMP_NUM_THREADS=1\n\nset -euo pipefail\n",
        "#SBATCH --partition=gpu\n", "#SBATCH --mail-type=END\n", "#SBATCH --signal=USR1@60\n",
        "'/jobs/demo.yaml' --run-dir \"$RUN_DIR\" --set 'training.epochs=3'\n",
        "#SBATCH --requeue\n", "  \"$MONSOON\" prepare --resume --run-dir \"$RUN_DIR\"\n",
        "srun --kill-on-bad-exit=0 --cpus-per-task=1 --output=",
        "launch --run-dir \"$RUN_DIR\" $RESUME || status=$?\n",
        // the progress line in the output file while srun runs
        "\"$MONSOON\" status --run-dir \"$RUN_DIR\" --follow 30 &\nprogress=$!\n",
        "kill \"$progress\" 2>/dev/null || true\n",
        // summarize after a failed srun too; the script keeps srun's status
        "if ! \"$MONSOON\" summarize --run-dir \"$RUN_DIR\" && [ \"$status\" -eq 0 ]; then\n",
        "exit \"$status\"\n"}) {
    INFO(line);
    CHECK(homogeneous.find(line) != std::string::npos);
  }
  CHECK(homogeneous.find("#SBATCH --output=/scratch/runs/demo/slurm-%j.out\n") !=
        std::string::npos);
  // A runs directory with spaces or quotes is one argument of the #SBATCH line.
  SbatchInputs spaced = in;
  spaced.runs_dir = "/scratch/my \"runs\"/demo";
  CHECK(SbatchScript(config, spaced)
            .find("#SBATCH --output=\"/scratch/my \\\"runs\\\"/demo/slurm-%j.out\"\n") !=
        std::string::npos);
  // Synchronous training with every worker in the quorum stops on a lost worker anyway.
  config.training.algorithm = Algorithm::kSync;
  CHECK(SbatchScript(config, in).find("srun --kill-on-bad-exit=1 ") != std::string::npos);
  config.training.algorithm = Algorithm::kDownpour;
  config.slurm.heterogeneous = true;
  config.slurm.worker_nodes = 2;
  const std::string het = SbatchScript(config, in);
  CHECK(het.find("#SBATCH hetjob\n# component 1: 2 worker(s)\n#SBATCH --nodes=2\n"
                 "#SBATCH --ntasks=2\n#SBATCH --cpus-per-task=1\n#SBATCH --gpus-per-node=1\n") !=
        std::string::npos);
  CHECK(het.find("--het-group=0,1,2") != std::string::npos);
}

}  // namespace
}  // namespace monsoon

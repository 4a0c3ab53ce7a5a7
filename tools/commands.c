/* commands.c - the commands of `rotor`: the table rotor.c dispatches on,
 * and what each command says about itself: its name, one-line summary,
 * synopsis, description and notes.  `rotor --help`, the rotor(1) command
 * list, each command's --help and its man page all print from here, so a
 * summary is written once; the options' own help lines stay with their
 * tables in the command's file. */
#include "tools/commands.h"
#include "ground/ground.h"

const rt_command_doc rotor_doc_gen = {
    .name = "gen",
    .summary = "generate data with planted structure (gen mf | gen lda)",
};

const rt_command_doc rotor_doc_gen_mf = {
    .name = "gen mf",
    .summary = "generate ratings with a planted low-rank structure",
    .usage = "--rows R --cols C --nnz N [--rank K] [--noise SIGMA] [--powerlaw ALPHA]\n"
             " [--seed S] --out FILE [--test-out FILE --test-fraction F]",
    .about =
        "Planted low-rank ratings: rating = w_u . h_i + SIGMA * N(0,1), factor entries "
        "N(0, 1/sqrt(K)); distinct (u, i) pairs; every row and column has a training "
        "rating.  Writes 'u i r' lines (1-based ids) and FILE.truth.json ('-' for FILE or "
        "the test file: standard output, without the truth file).  Existing files are replaced "
        "only when they are an earlier output of rotor gen mf (named in FILE.truth.json).",
    .examples = "rotor gen mf --rows 2000 --cols 500 --nnz 44000 --out ratings.txt \\\n"
                "    --test-out test.txt --test-fraction 0.1",
};

const rt_command_doc rotor_doc_gen_lda = {
    .name = "gen lda",
    .summary = "generate a corpus from the LDA generative process",
    .usage = "--docs D --vocab V --topics K --doc-len L --out FILE\n"
             " [--alpha A] [--beta B] [--len-dist poisson|fixed] [--seed S]",
    .about = "Draw a corpus from the LDA generative process: topics phi_k ~ Dirichlet(beta), "
             "document mixtures theta_d ~ Dirichlet(alpha), lengths fixed or Poisson(L).  "
             "Writes FILE (UCI docword), FILE.topics.npy (the true K x V topic-word matrix), "
             "FILE.mixtures.npy (the true D x K document mixtures) and FILE.vocab.txt ('-' for "
             "FILE: standard output, the corpus alone).  Existing files are replaced only "
             "when they are an earlier output of rotor gen lda.",
    .examples = "rotor gen lda --docs 300 --vocab 1000 --topics 8 --doc-len 80 --out corpus.txt",
};

const rt_command_doc rotor_doc_partition = {
    .name = "partition",
    .summary = "cut data into blocks and precompute the rotation schedule",
    .usage = "--input FILE [--test FILE | --test-fraction F] [--format FMT]\n"
             " --nodes P --threads T [--pipeline C] [--seed S] [--balance greedy|random]\n"
             " --out DIR [--force]\n"
             "--app lda --input PATH [--format FMT] [--vocab FILE] [--stopwords FILE]\n"
             " [--min-count N] [--test-fraction F] --nodes P --threads T ... --out DIR\n"
             "--verify DIR",
    .about = "Cut a ratings matrix (or with --app lda a corpus: documents x words) into P*T row "
             "blocks and C*P*T column blocks, balance them and precompute the rotation schedule; "
             "write the plan directory DIR.\n\n"
             "Ratings formats: triplets 'user item rating [timestamp]' (spaces or tabs), csv "
             "(',' or ';', fields optionally in double quotes; ';' files may write '3,5'), "
             "movielens-dat 'u::i::r[::t]', netflix ('ITEM:' lines heading 'user,rating[,date]' "
             "lines, the Netflix Prize's), mm (MatrixMarket coordinate), libmf (0-based 'u v "
             "r').  A first line whose rating is not a number and whose user is not an integer "
             "is a header, and skipped.  A fourth field (a timestamp in MovieLens, a date "
             "elsewhere) is never read: whatever it holds, it is ignored.  Lines of two fields "
             "'user item' (implicit feedback) count 1 each.\n\n"
             "Corpus formats: uci (docword.*.txt: D, W, NNZ header; 'doc word count', 1-based), "
             "lines ('docid docid w1 w2 ...', Yahoo!LDA / WarpLDA / STRADS), libsvm "
             "('docid w:count ...'), ldac ('N w:count ...', Blei's lda-c; 0-based ids into "
             "--vocab), text (raw text: one document per line, or a directory of files).",
    .examples =
        "rotor partition --input ratings.txt --test test.txt --nodes 2 --threads 2 --out plan\n"
        "rotor partition --app lda --input corpus.txt --vocab corpus.txt.vocab.txt \\\n"
        "    --nodes 1 --threads 2 --out lda-plan\n"
        "rotor partition --verify plan",
};

const rt_command_doc rotor_doc_train = {
    .name = "train",
    .summary = "train a model by following a plan (sgd-mf, cd-mf, lda)",
    .usage = "--plan DIR [--app sgd-mf|cd-mf|lda] [OPTIONS] [APP OPTIONS]",
    .about = "Train a model by following a plan made by `rotor partition`.  Run it under "
             "`rotor launch -n P -- rotor train ...`, mpirun or srun for P processes; the "
             "plan's worker count must equal processes x threads.  The process's rank and the "
             "process count come from --node and --nodes, else from rotor launch, Open MPI "
             "(OMPI_COMM_WORLD_RANK/SIZE), PMIx (PMIX_RANK), MVAPICH2 (MV2_COMM_WORLD_RANK/SIZE), "
             "PMI (PMI_RANK/SIZE), Flux (FLUX_TASK_RANK, FLUX_JOB_SIZE) or Slurm "
             "(SLURM_PROCID/NTASKS), in that order, else 0 and 1.  Several processes need a job "
             "secret (rotor launch makes one; else ROTOR_TOKEN or --token-file) or --insecure.  "
             "All ranks must agree on the plan, the app and its options: a difference stops "
             "every rank before training (exit 2), naming the option.",
    .notes = "One log line per epoch: epoch, seconds, updates/s, train RMSE, test RMSE, stall % "
             "(share of the epoch spent waiting for blocks to arrive); --quiet leaves them out.",
    .examples =
        "rotor launch -n 2 -- rotor train --plan plan --app sgd-mf --epochs 20 --out model \\\n"
        "    --metrics metrics.json\n"
        "rotor train --plan lda-plan --app lda --topics 8 --iters 50 --out lda-model",
};

const rt_command_doc rotor_doc_launch = {
    .name = "launch",
    .summary = "start P local processes of a command on loopback",
    .usage = "-n P [--base-port N] [--timeout S] [--] CMD [ARGS...]",
    .about = "Run P local copies of CMD as ranks 0..P-1 of one group on loopback.  Each gets "
             "ROTOR_RANK, ROTOR_SIZE, ROTOR_LOCAL_RANK, ROTOR_LOCAL_SIZE, ROTOR_HOSTFILE and "
             "ROTOR_TOKEN, a secret made for this job (or the launcher's own ROTOR_TOKEN); "
             "their output lines are prefixed with \"[rank] \".  When one rank fails, the "
             "others get 5 s to exit, then are terminated; a rank stopped for 12 s is killed; "
             "the ranks die with the launcher, which leaves no files behind.  The exit status "
             "is the first failure's, 0 when every rank exited 0.",
    .examples =
        "rotor launch -n 2 --timeout 600 -- rotor train --plan plan --app cd-mf --outer 5 \\\n"
        "    --out cd-model",
};

const rt_command_doc rotor_doc_eval = {
    .name = "eval",
    .summary = "score a saved MF model on a ratings file",
    .usage = "--model DIR --input FILE [--format F] [--json]\n"
             "--model DIR --input FILE --top-k K [--exclude FILE | --no-exclude] [--json]",
    .about = "Score an SGD-MF or CD-MF model written by `rotor train --out DIR` on a ratings file "
             "(any format `rotor partition` reads; ids are the original ones).  Ratings whose "
             "user or item the model never saw are skipped and counted.\n\n"
             "With --top-k K it also ranks, for every user with a test rating, all items the "
             "user did not have in training (read from the model's plan, or --exclude FILE) and "
             "reports precision@K, recall@K, NDCG@K, MAP@K and catalogue coverage of the model "
             "and of the most-popular baseline (items by their number of training users) on "
             "the same split; every test rating is a relevant item (--relevant-min R keeps "
             "those >= R).",
    .examples = "rotor eval --model model --input test.txt\n"
                "rotor eval --model model --input test.txt --top-k 10 --json",
};

const rt_command_doc rotor_doc_recommend = {
    .name = "recommend",
    .summary = "the K best items for each user of a saved MF model",
    .usage = "--model DIR --top K [--users FILE] [--exclude FILE | --no-exclude]\n"
             " [--out FILE] [--threads T] [--json]",
    .about = "For each user of the model (or each user listed in --users, one original id a "
             "line) write the K items with the highest predicted scores that the user did not "
             "have in training (read from the plan the model was trained on, or from the "
             "ratings file --exclude; --no-exclude ranks every item).  Equal scores go to the "
             "item the model numbered first.  Output: one line per recommendation, "
             "`user<TAB>item<TAB>score<TAB>rank` (rank 1 = best), or with --json one JSON "
             "object per user and line: {\"user\", \"items\", \"scores\"}.  A user with fewer "
             "than K candidate items gets them all.\n\n"
             "Users are scored in blocks of --batch users x all items on --threads threads, "
             "so memory is bounded by the block.  Ids in --users the model does not know are "
             "reported and skipped; if none is known that is an error.",
    .examples = "rotor recommend --model model --top 5 --out top5.tsv",
};

const rt_command_doc rotor_doc_topics = {
    .name = "topics",
    .summary = "print the top words of a trained LDA model",
    .usage = "--model DIR [--top N]",
    .about = "Print the N most frequent words of every topic of an LDA model saved by "
             "`rotor train --app lda --out DIR`, one line per topic: topic K (share of the "
             "tokens): words...",
    .examples = "rotor topics --model lda-model --top 8",
};

const rt_command_doc rotor_doc_infer = {
    .name = "infer",
    .summary = "topic mixtures of new documents under a trained LDA model",
    .usage = "--model DIR --input PATH [--format FMT] [--vocab FILE] --out DIR\n"
             " [--iters N] [--threads T] [--seed S] [--top N] [--quiet]",
    .about = "Sample the topics of new documents with the word-topic counts of an LDA model "
             "(written by `rotor train --app lda --out DIR`) held fixed.  The documents may be in "
             "any corpus format `rotor partition --app lda` reads; their words are mapped through "
             "the model's vocabulary, and words the model never saw are left out and counted.  "
             "The result depends on --seed, not on --threads.\n\n"
             "Writes into --out: doc_topic.npy (int32 documents x topics: topic counts), docs.txt "
             "(document ids), doc_topics.txt (each document's --top topics with their shares) and "
             "infer.json.  Prints the documents' perplexity by document completion, as training "
             "reports it for held-out documents: each document's tokens are split in two halves, "
             "the topics are sampled from one and the other is scored.",
    .examples = "rotor infer --model lda-model --input corpus.txt --vocab corpus.txt.vocab.txt \\\n"
                "    --out mixtures",
};

const rt_command_doc rotor_doc_export = {
    .name = "export",
    .summary = "merge a saved model's per-rank parts into single files",
    .usage = "--model DIR --out OUT [--format npy|libmf|text] [--memory MB] [--quiet]",
    .about = "`rotor train --out DIR` saves a model as per-rank part files plus a manifest "
             "(model.json).  Export merges the parts, streaming within --memory, into OUT:\n\n"
             "npy: the single-file model: W.npy, H.npy, row_bias.npy, col_bias.npy (MF) or "
             "word_topic.npy, topic_word.npy, doc_topic.npy, topics.txt (LDA), in dense id order, "
             "with the id files and model.json; numpy.load opens the matrices and rotor eval and "
             "rotor topics read OUT like DIR.\n\n"
             "libmf: LIBMF's model text (model.txt; MF only).  Row i is dense id i (line i of "
             "rows.ids); a model with biases gets two more factor columns, (b_u, 1) and (1, b_i), "
             "and b = mu.\n\n"
             "text: one line per row, the original id then the values (W.txt, H.txt, ... or "
             "word_topic.txt, doc_topic.txt).",
    .examples = "rotor export --model model --out model-npy\n"
                "rotor export --model lda-model --out lda-text --format text",
};

const rt_command_doc rotor_doc_plot = {
    .name = "plot",
    .summary = "convergence curves of training runs (--metrics files) as PNG or SVG",
    .usage = "METRICS.json... --out FILE.png|FILE.svg [--x epoch|seconds] [--y KEYS] [...]",
    .about = "Draw the convergence curves of training runs from the files `rotor train "
             "--metrics FILE` writes (sgd-mf, cd-mf and lda); several runs are overlaid, each "
             "labelled with its app and the settings that differ between the runs.  An existing "
             "--out is replaced only when it is a picture of the same format (PNG or SVG).\n\n"
             "Needs gnuplot (Debian package gnuplot-nox); without it the command says so and "
             "exits with status 1.",
    .examples = "rotor plot metrics.json --y train_rmse,test_rmse --out convergence.png",
};

const rt_command_doc rotor_doc_bench_link = {
    .name = "bench-link",
    .summary = "latency and bandwidth of the transport (like perftest)",
    .usage = "[OPTIONS]   (under rotor launch -n 2, mpirun or srun)",
    .about = "Latency (ping-pong) and one-way bandwidth of the transport's ring pass for block "
             "sizes from --min-size to --max-size (powers of two), printed by rank 0 like "
             "perftest's ib_write_lat / ib_write_bw.  Run it as two ranks: "
             "`rotor launch -n 2 -- rotor bench-link`.",
    .examples = "rotor launch -n 2 -- rotor bench-link --max-size 4M --iters 20",
};

const rt_command_doc rotor_doc_simulate = {
    .name = "simulate",
    .summary = "predict epoch time, stall and traffic of a schedule on N nodes",
    .usage = "--plan DIR --app APP [OPTIONS] [APP OPTIONS]\n"
             "--app APP --rows R --cols C --nnz N --nodes N[,N...] [OPTIONS]",
    .about = "Predict the epoch time, stall % and bytes per link of a rotation schedule on N "
             "nodes x T threads, from a discrete-event model of the engine (sim/sim.h): per-cell "
             "compute, ring passes with slots and credits, per-step collectives.  The shape comes "
             "from a plan, or from sizes alone (uniform cells), which can sweep the node count.  "
             "App options such as --rank K or --topics K are given as for rotor train.",
    .examples = "rotor simulate --plan plan --app sgd-mf --calibrate\n"
                "rotor simulate --app sgd-mf --rows 480189 --cols 17770 --nnz 100480507 \\\n"
                "    --nodes 2,4,8,16 --gbps 10 --rate 2e7",
};

const rt_command_doc rotor_doc_help = {
    .name = "help",
    .summary = "help, man pages (--man) and bash completion (--completion)",
    .usage = "[CMD [SUB]]\n--man [CMD [SUB]]\n--pages\n--completion",
    .about = "Print the help of rotor or of a command; or, generated from the same option tables "
             "as --help: a man page in roff (rotor.1 without a command, rotor-CMD.1 with one), "
             "the names of the man pages, or the bash completion script.  The build installs "
             "them (cmake --install).",
    .examples = "rotor help --man train > rotor-train.1\n"
                "rotor help --completion > rotor.bash",
};

static const char *const gen_subs[] = {"mf", "lda", NULL};

const rotor_command rotor_commands[] = {
    {"gen", cmd_gen, &rotor_doc_gen, gen_subs},
    {"partition", cmd_partition, &rotor_doc_partition, NULL},
    {"train", cmd_train, &rotor_doc_train, NULL},
    {"launch", cmd_launch, &rotor_doc_launch, NULL},
    {"eval", cmd_eval, &rotor_doc_eval, NULL},
    {"recommend", cmd_recommend, &rotor_doc_recommend, NULL},
    {"topics", cmd_topics, &rotor_doc_topics, NULL},
    {"infer", cmd_infer, &rotor_doc_infer, NULL},
    {"export", cmd_export, &rotor_doc_export, NULL},
    {"plot", cmd_plot, &rotor_doc_plot, NULL},
    {"bench-link", cmd_bench_link, &rotor_doc_bench_link, NULL},
    {"simulate", cmd_simulate, &rotor_doc_simulate, NULL},
    {"help", cmd_help, &rotor_doc_help, NULL},
    {NULL, NULL, NULL, NULL},
};

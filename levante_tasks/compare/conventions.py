"""Scientific conventions of the comparison, written into every output so no number is read without them."""

from __future__ import annotations

B_DEFINITION = "b = -d / a1 (mirt intercept d is easiness); higher b = harder for children"
R_SIGN = "a child-aligned model has a NEGATIVE r(correct, b): it fails the items children find hard"
CORRELATION_CI = (
    "Fisher z over the n matched items: tanh(atanh(r) +- q * se), q the normal quantile of the level, "
    "se = 1 / sqrt(n - 3) for r_pb and sqrt(1.06 / (n - 3)) for Spearman rho"
)
KL_DEFINITION = (
    "KL(human || model) = sum_k p_k ln(p_k / q_k), natural log; p_k = 0 terms contribute 0; "
    "q = softmax(beta * option_scores); q_k == 0 replaced by epsilon"
)
KL_EPSILON = 1e-5
CALIBRATION_TOLERANCE = 0.01  # logits: an IRT record whose scores differ more from its own data rescored is refused
BETA_BOUNDS = (0.025, 40.0)
THETA_GRID = (-6.0, 6.0, 61)
EAP_DEFINITION = (
    "EAP on 61 equally spaced points in [-6, 6] with a normal prior (group MEAN_1, COV_11), "
    "P = g + (u - g) / (1 + exp(-(a1 * theta + d))); SE = posterior SD"
)
ML_DEFINITION = (
    "ML theta (no prior) in [-6, 6], SE = 1 / sqrt(test information); only for units that answered every IRT item"
)
BIN_DEFINITION = "ability bin 'k_k+1' holds children with floor(theta) = k (1-logit bins, calibration theta)"
OPTION_ORDER = (
    "canonical option order: [answer] + distractors as listed (index 0 = correct); children's responses are "
    "mapped to it by option text or image key, never by their position in a trial's list"
)
COMMON_SCALE = (
    "one scale: the model's theta is its EAP under the reference group's prior and children's theta_common is "
    "their EAP from their trials under the same prior (children_below_theta, age curve)"
)
UNIFORM_TEST = (
    "permutation test over items: S = sum_ik m_ik (s_ik - mean_k s_ik), the slope at beta = 0 of the children's "
    "count-weighted log-likelihood; null: each item's option scores exchangeable (options permuted per item); "
    "p = (1 + #{S_perm >= S}) / (1 + n_perm)"
)
UNIFORM_FAMILY = (
    "Holm's step-down adjustment over each model's tests in the run (its tasks and children's languages): the "
    "i-th smallest of the m p-values times (m - i + 1), made non-decreasing, capped at 1 (uniform_test_p_holm; "
    "m = uniform_test_family_size); deciding on it keeps the chance of any false 'beats uniform' for a model at "
    "most 1 - level"
)
KL_WEIGHTING = (
    "(item, bin) cells weighted by their children's count n (mean_kl; beta maximises the likelihood of the "
    "children's responses); mean_kl_unweighted weights cells equally (DevBench), at its own beta_unweighted; "
    "uniform = q_k = 1/K baseline"
)
ORDERS_TOLERANCE = 0.02  # nats: the default replicate half-width at which a model has enough option orders
ORDER_REPLICATES = (
    "a model without option scores (or any model run under several option-order seeds): replicate r = option-order "
    "seed r, the seeds of an item with n options in whole blocks of n (each a Latin square: every option at every "
    "position once); counted: the first n * floor(R / n) seeds of the R present from 0, every record of a counted "
    "seed; q_k = (c_k + alpha) / (parsed + n * alpha) with the counts c of canonical options chosen, alpha the "
    "Dirichlet prior (0.5, Jeffreys); unparsed answers counted apart (unparsed_share), never as an option; "
    "KL(human || q) weighted by the cell's children as for scored models, no beta (q is a distribution); "
    "intervals: basic bootstrap (2 KL - percentiles), each item's parsed answers redrawn from its q, items "
    "resampled too (kl_ci) or not (kl_replicate_ci, whose half-width is kl_replicate_halfwidth); beats uniform: "
    "the same permutation test with ln q as the scores; orders_enough: the smallest of K/4, K/2, K seeds (whole "
    "blocks) whose replicate half-width <= orders_tolerance"
)

FLAG_DROP = 0.5  # flagged when |centred model drop - centred children drop| (proportions) is at least this
CROSS_LANGUAGE = (
    "per item and translated locale L: drop = accuracy in English - accuracy in L, for the model runs paired with "
    "the same run in English (original images) and for the children of English and of L (>= min_n trials each); "
    "each drop centred on its mean over the task and locale's items with both drops; "
    f"flagged when |centred model drop - centred children drop| >= {FLAG_DROP:g}, ranked largest first within "
    "task and locale"
)
LANGUAGE_MATCH = (
    "a model run in locale L is compared with the children whose language (trials' language, else runs' language "
    "by run_id) is L, on the IRT record of L's language for tasks calibrated per language (vocab, theory-of-mind); "
    "--across-languages adds every other language's children, each row labelled with both"
)


def conventions() -> dict[str, object]:
    """All conventions as one JSON-ready mapping (embedded in comparison.json and the report)."""
    return {
        "difficulty": B_DEFINITION,
        "correlation_sign": R_SIGN,
        "correlation_ci": CORRELATION_CI,
        "kl": KL_DEFINITION,
        "kl_epsilon": KL_EPSILON,
        "beta_bounds": list(BETA_BOUNDS),
        "eap": EAP_DEFINITION,
        "ability_bins": BIN_DEFINITION,
        "option_order": OPTION_ORDER,
        "theta_scale": COMMON_SCALE,
        "kl_weighting": KL_WEIGHTING,
        "uniform_test": UNIFORM_TEST,
        "uniform_test_family": UNIFORM_FAMILY,
        "ml": ML_DEFINITION,
        "languages": LANGUAGE_MATCH,
        "cross_language": CROSS_LANGUAGE,
    }

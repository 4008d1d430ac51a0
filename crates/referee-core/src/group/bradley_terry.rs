//! Bradley–Terry strengths from pairwise comparisons, for spreading rewards inside a tie when
//! only some pairs were compared (each rollout against a few anchors, not all pairs).
//!
//! The model: `P(i beats j) = p_i / (p_i + p_j)`. Fitted with Hunter's (2004) MM iteration
//! `p_i ← W_i / Σ_j n_ij / (p_i + p_j)`, which increases the likelihood at every step. Two
//! things make it well defined on the graphs a tournament produces:
//! - a small **prior** (`prior` virtual wins and as many virtual losses of each player against
//!   a pseudo-player of strength 1): a rollout that won or lost every comparison would
//!   otherwise go to ±∞, and the fit would not converge;
//! - **connected components** are fitted separately: strengths in two parts of the graph that
//!   were never compared with each other are not comparable, so each part is centred on its own
//!   (mean log-strength 0) and the partition is reported, never hidden.

/// One comparison: `score` is what `i` got against `j` (1 a win, 0 a loss, 0.5 a tie), with a
/// `weight` (1 for a single comparison).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Comparison {
    pub i: usize,
    pub j: usize,
    pub score: f64,
    pub weight: f64,
}

impl Comparison {
    pub fn win(winner: usize, loser: usize) -> Self {
        Comparison {
            i: winner,
            j: loser,
            score: 1.0,
            weight: 1.0,
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct BtOptions {
    /// Virtual wins and losses against a strength-1 pseudo-player (ridge-like shrinkage).
    pub prior: f64,
    pub max_iter: usize,
    /// Stop when no log-strength moves by more than this.
    pub tol: f64,
}

impl Default for BtOptions {
    fn default() -> Self {
        BtOptions {
            prior: 0.1,
            max_iter: 10_000,
            tol: 1e-10,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct BtFit {
    /// Log-strength per player, centred to mean 0 within its component.
    pub log_strength: Vec<f64>,
    /// The connected components of the comparison graph (players never compared are their own).
    pub components: Vec<Vec<usize>>,
    /// Largest number of MM iterations any component needed.
    pub iterations: usize,
    /// Whether every component met `tol` within `max_iter`.
    pub converged: bool,
}

impl BtFit {
    /// Whether every player can be compared with every other (one component).
    pub fn connected(&self) -> bool {
        self.components.len() <= 1
    }
}

/// Fits `n` players' strengths. Comparisons naming a player `≥ n`, a player against itself, or
/// with a non-finite or non-positive weight are ignored; scores are clamped to [0, 1].
pub fn fit(n: usize, comparisons: &[Comparison], opts: BtOptions) -> BtFit {
    let cs: Vec<Comparison> = comparisons
        .iter()
        .filter(|c| c.i < n && c.j < n && c.i != c.j && c.weight.is_finite() && c.weight > 0.0)
        .map(|c| Comparison {
            score: if c.score.is_finite() {
                c.score.clamp(0.0, 1.0)
            } else {
                0.5
            },
            ..*c
        })
        .collect();
    let components = components(n, &cs);
    let mut comp_of = vec![0; n];
    for (k, c) in components.iter().enumerate() {
        for &p in c {
            comp_of[p] = k;
        }
    }
    let mut log_strength = vec![0.0; n];
    let mut iterations = 0;
    let mut converged = true;
    // Wins and the pairs each player took part in.
    let mut wins = vec![0.0; n];
    let mut adj: Vec<Vec<(usize, f64)>> = vec![Vec::new(); n];
    for c in &cs {
        wins[c.i] += c.weight * c.score;
        wins[c.j] += c.weight * (1.0 - c.score);
        adj[c.i].push((c.j, c.weight));
        adj[c.j].push((c.i, c.weight));
    }
    let prior = opts.prior.max(0.0);
    for comp in &components {
        if comp.len() < 2 {
            continue;
        }
        let mut p: Vec<f64> = vec![1.0; n];
        let mut it = 0;
        let mut done = false;
        while it < opts.max_iter {
            it += 1;
            let mut delta: f64 = 0.0;
            let mut next = Vec::with_capacity(comp.len());
            for &a in comp {
                let mut denom = 2.0 * prior / (p[a] + 1.0);
                for &(b, w) in &adj[a] {
                    denom += w / (p[a] + p[b]);
                }
                let num = wins[a] + prior;
                // With no prior, a player that never won has strength → 0; keep it positive.
                let v = if denom > 0.0 {
                    (num / denom).max(1e-300)
                } else {
                    p[a]
                };
                next.push(v);
            }
            // Normalise to geometric mean 1 (the model is invariant to a common scale).
            let g = next.iter().map(|v: &f64| v.ln()).sum::<f64>() / comp.len() as f64;
            for (&a, v) in comp.iter().zip(next) {
                let nv = (v.ln() - g).exp();
                delta = delta.max((nv.ln() - p[a].ln()).abs());
                p[a] = nv;
            }
            if delta <= opts.tol {
                done = true;
                break;
            }
        }
        iterations = iterations.max(it);
        converged &= done;
        for &a in comp {
            log_strength[a] = p[a].ln();
        }
    }
    BtFit {
        log_strength,
        components,
        iterations,
        converged,
    }
}

/// Connected components by union–find, each sorted, in order of their smallest player.
fn components(n: usize, cs: &[Comparison]) -> Vec<Vec<usize>> {
    fn find(parent: &mut [usize], mut x: usize) -> usize {
        while parent[x] != x {
            parent[x] = parent[parent[x]];
            x = parent[x];
        }
        x
    }
    let mut parent: Vec<usize> = (0..n).collect();
    for c in cs {
        let (a, b) = (find(&mut parent, c.i), find(&mut parent, c.j));
        if a != b {
            parent[a.max(b)] = a.min(b);
        }
    }
    let mut index = vec![usize::MAX; n];
    let mut out: Vec<Vec<usize>> = Vec::new();
    for x in 0..n {
        let r = find(&mut parent, x);
        if index[r] == usize::MAX {
            index[r] = out.len();
            out.push(Vec::new());
        }
        out[index[r]].push(x);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sigmoid(x: f64) -> f64 {
        1.0 / (1.0 + (-x).exp())
    }

    /// Comparisons carrying exactly the expected win rate under `theta` (the MLE is `theta`).
    fn expected(theta: &[f64], pairs: &[(usize, usize)], weight: f64) -> Vec<Comparison> {
        pairs
            .iter()
            .map(|&(i, j)| Comparison {
                i,
                j,
                score: sigmoid(theta[i] - theta[j]),
                weight,
            })
            .collect()
    }

    fn centred(theta: &[f64]) -> Vec<f64> {
        let m = theta.iter().sum::<f64>() / theta.len() as f64;
        theta.iter().map(|t| t - m).collect()
    }

    #[test]
    fn recovers_known_strengths_on_a_complete_graph() {
        let theta = centred(&[1.5, 0.5, 0.0, -0.7, -1.3]);
        let mut pairs = Vec::new();
        for i in 0..5 {
            for j in i + 1..5 {
                pairs.push((i, j));
            }
        }
        let f = fit(
            5,
            &expected(&theta, &pairs, 1000.0),
            BtOptions {
                prior: 1e-6,
                ..BtOptions::default()
            },
        );
        assert!(f.converged && f.connected());
        for (a, b) in f.log_strength.iter().zip(&theta) {
            assert!((a - b).abs() < 1e-4, "{:?} vs {theta:?}", f.log_strength);
        }
    }

    #[test]
    fn converges_on_an_incomplete_anchor_graph() {
        // 12 rollouts; rollouts 0..3 are anchors; every other rollout meets two anchors only.
        let theta: Vec<f64> = centred(
            &(0..12)
                .map(|i| 2.0 - 0.35 * f64::from(i))
                .collect::<Vec<_>>(),
        );
        let mut pairs = vec![(0, 1), (1, 2), (0, 2)];
        for r in 3..12 {
            pairs.push((r, r % 3));
            pairs.push((r, (r + 1) % 3));
        }
        let f = fit(12, &expected(&theta, &pairs, 200.0), BtOptions::default());
        assert!(f.converged, "{f:?}");
        assert!(f.connected());
        for w in 0..11 {
            assert!(
                f.log_strength[w] > f.log_strength[w + 1],
                "order lost at {w}: {:?}",
                f.log_strength
            );
        }
    }

    #[test]
    fn a_perfect_record_stays_finite_with_the_prior() {
        // 0 beats everyone, 3 loses to everyone, single comparisons only.
        let cs = [
            Comparison::win(0, 1),
            Comparison::win(0, 2),
            Comparison::win(0, 3),
            Comparison::win(1, 3),
            Comparison::win(2, 3),
            Comparison {
                i: 1,
                j: 2,
                score: 0.5,
                weight: 1.0,
            },
        ];
        let f = fit(4, &cs, BtOptions::default());
        assert!(f.converged);
        assert!(f.log_strength.iter().all(|x| x.is_finite()));
        let s = &f.log_strength;
        assert!(s[0] > s[1] && s[0] > s[2] && s[1] > s[3] && s[2] > s[3]);
        assert!((s[1] - s[2]).abs() < 1e-9, "symmetric players tie: {s:?}");
    }

    #[test]
    fn disconnected_parts_are_fitted_and_reported_separately() {
        let cs = [
            Comparison::win(0, 1),
            Comparison::win(0, 1),
            Comparison::win(1, 0),
            Comparison::win(3, 2),
        ];
        let f = fit(5, &cs, BtOptions::default());
        assert_eq!(f.components, vec![vec![0, 1], vec![2, 3], vec![4]]);
        assert!(!f.connected());
        let s = &f.log_strength;
        // Each part centred on its own; the lone player 4 has no information: 0.
        assert!((s[0] + s[1]).abs() < 1e-9 && s[0] > 0.0);
        assert!((s[2] + s[3]).abs() < 1e-9 && s[3] > 0.0);
        assert_eq!(s[4], 0.0);
    }

    #[test]
    fn ignores_malformed_comparisons() {
        let cs = [
            Comparison::win(0, 0),
            Comparison::win(0, 9),
            Comparison {
                i: 0,
                j: 1,
                score: 1.0,
                weight: f64::NAN,
            },
        ];
        let f = fit(2, &cs, BtOptions::default());
        assert_eq!(f.components.len(), 2);
        assert_eq!(f.log_strength, vec![0.0, 0.0]);
    }
}

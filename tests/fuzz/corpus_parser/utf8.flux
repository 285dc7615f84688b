σ′ = Δ₀(xᵢ) # comment with ünïcödé

# Runs in the scientific Python guest: pandas, numpy and matplotlib are
# already imported in every fresh instance.
import numpy as np
import pandas as pd
import matplotlib.pyplot as plt

rng = np.random.default_rng()
df = pd.DataFrame({"day": np.arange(1, 31), "orders": rng.poisson(40, 30)})
df["week"] = (df.day - 1) // 7 + 1
print(df.groupby("week").orders.agg(["sum", "mean"]).round(1).to_string())
df.plot(x="day", y="orders", title="orders per day")  # saved as out/figure-1.png

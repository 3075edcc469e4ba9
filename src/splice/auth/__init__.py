"""How a caller proves who it is: API keys (:mod:`.keys`), bearer tokens turned into principals
(:mod:`.tokens`) and sign-in through the team's identity provider (:mod:`.oidc`)."""

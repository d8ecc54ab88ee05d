from dpmic_dask.batch.cli import main

main()
